"""The example booking API, over real HTTP on loopback (uvicorn on a free port)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from handrail.actions import ActionConfigError, load_action_set
from handrail.demo.booking_api import (
    BOOKING_YAML,
    SLOTS,
    booking_action_set,
    create_booking_app,
    serve_booking_api,
)

DATE = "2026-05-01"


class Clock:
    """A clock the tests move by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def api(clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    app = create_booking_app(token_ttl_s=30, clock=clock)
    async with (
        serve_booking_api(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=10) as client,
    ):
        yield client


async def slots(api: httpx.AsyncClient, date: str = DATE) -> list[dict[str, Any]]:
    response = await api.get("/slots", params={"date": date})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["date"] == date
    result: list[dict[str, Any]] = body["slots"]
    return result


async def token_for(api: httpx.AsyncClient, time: str, date: str = DATE) -> str:
    (slot,) = [s for s in await slots(api, date) if s["time"] == time]
    token: str = slot["token"]
    return token


async def book(
    api: httpx.AsyncClient,
    token: str,
    *,
    key: str | None = None,
    date: str = DATE,
    notes: str | None = "window seat",
) -> httpx.Response:
    body: dict[str, Any] = {"date": date, "slot_token": token}
    if notes is not None:
        body["notes"] = notes
    headers = {"Idempotency-Key": key} if key is not None else {}
    return await api.post("/bookings", json=body, headers=headers)


async def control(api: httpx.AsyncClient, *faults: dict[str, Any], path: str | None = None) -> Any:
    body: dict[str, Any] = {"next": list(faults)}
    if path is not None:
        body["path"] = path
    response = await api.post("/control", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def stats(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await api.get("/stats")
    assert response.status_code == 200
    result: list[dict[str, Any]] = response.json()["requests"]
    return result


# --- slots --------------------------------------------------------------------------------------


async def test_slots_of_a_date(api: httpx.AsyncClient) -> None:
    free = await slots(api)
    assert [(s["time"], s["seats"]) for s in free] == list(SLOTS)
    tokens = [s["token"] for s in free]
    assert len(set(tokens)) == len(tokens)
    assert all(isinstance(t, str) and len(t) >= 20 for t in tokens)
    # the same tokens while they are valid; another date has its own
    assert [s["token"] for s in await slots(api)] == tokens
    other = await slots(api, "2026-05-02")
    assert [s["time"] for s in other] == [time for time, _ in SLOTS]
    assert not {s["token"] for s in other} & set(tokens)


@pytest.mark.parametrize("query", [{}, {"date": "tomorrow"}, {"date": "2026-02-30"}])
async def test_slots_need_a_valid_date(api: httpx.AsyncClient, query: dict[str, str]) -> None:
    response = await api.get("/slots", params=query)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_DATE"


async def test_an_expired_token_is_replaced(api: httpx.AsyncClient, clock: Clock) -> None:
    old = await token_for(api, "19:00")
    clock.now += 31
    new = await token_for(api, "19:00")
    assert new != old
    gone = await book(api, old)
    assert gone.status_code == 410
    assert gone.json()["code"] == "SLOT_GONE"
    assert (await book(api, new)).status_code == 201


# --- bookings -----------------------------------------------------------------------------------


async def test_booking_a_slot(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "19:00")
    response = await book(api, token)
    assert response.status_code == 201
    booking = response.json()
    assert booking == {
        "id": booking["id"],
        "date": DATE,
        "time": "19:00",
        "notes": "window seat",
        "status": "confirmed",
    }
    assert token not in response.text
    assert [s["time"] for s in await slots(api)] == ["18:00", "20:00", "21:00"]
    assert [s["time"] for s in await slots(api, "2026-05-02")] == [t for t, _ in SLOTS]

    read = await api.get(f"/bookings/{booking['id']}")
    assert read.status_code == 200
    assert read.json() == booking
    missing = await api.get("/bookings/bk_nope")
    assert missing.status_code == 404


async def test_notes_are_optional(api: httpx.AsyncClient) -> None:
    response = await book(api, await token_for(api, "18:00"), notes=None)
    assert response.status_code == 201
    assert response.json()["notes"] is None


async def test_a_taken_slot_is_409_and_an_unknown_token_410(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "20:00")
    assert (await book(api, token)).status_code == 201
    taken = await book(api, token)
    assert taken.status_code == 409
    assert taken.json()["code"] == "SLOT_TAKEN"
    unknown = await book(api, "slt_not-a-token")
    assert unknown.status_code == 410
    assert unknown.json()["code"] == "SLOT_GONE"


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"slot_token": "x"},
        {"date": "01/05/2026", "slot_token": "x"},
        {"date": DATE},
        {"date": DATE, "slot_token": ""},
        {"date": DATE, "slot_token": "x", "notes": 3},
        {"date": DATE, "slot_token": "x", "notes": "n" * 1001},
        {"date": DATE, "slot_token": "x", "seats": 9},
    ],
)
async def test_a_bad_booking_body_is_422(api: httpx.AsyncClient, body: Any) -> None:
    response = await api.post("/bookings", json=body)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_BODY"


async def test_a_token_for_another_date_is_422(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "19:00")
    response = await book(api, token, date="2026-05-02")
    assert response.status_code == 422
    assert len(await slots(api)) == len(SLOTS)


async def test_the_body_must_be_json(api: httpx.AsyncClient) -> None:
    response = await api.post("/bookings", content=b"date=2026-05-01")
    assert response.status_code == 422


# --- idempotency --------------------------------------------------------------------------------


async def test_the_same_key_returns_the_same_booking(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "19:00")
    first = await book(api, token, key="key-1")
    assert first.status_code == 201
    again = await book(api, token, key="key-1")
    assert again.status_code == 200
    assert again.json() == first.json()
    assert len(api_bookings := await slots(api)) == len(SLOTS) - 1, api_bookings

    other = await book(api, await token_for(api, "20:00"), key="key-1")
    assert other.status_code == 422
    assert other.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(await slots(api)) == len(SLOTS) - 1

    # a new key for the same slot is a new booking attempt: the slot is taken
    assert (await book(api, token, key="key-2")).status_code == 409


async def test_concurrent_requests_with_one_key_book_once(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "21:00")
    answers = await asyncio.gather(*(book(api, token, key="same") for _ in range(5)))
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 200, 201]
    assert len({a.json()["id"] for a in answers}) == 1


# --- fault injection ----------------------------------------------------------------------------


async def test_injected_statuses_apply_in_order_and_book_nothing(api: httpx.AsyncClient) -> None:
    queued = await control(api, {"status": 409}, {"status": 410}, {"status": 503})
    assert queued == {"queued": {"/bookings": 3, "/slots": 0}}
    token = await token_for(api, "19:00")  # /slots is not affected
    for status in (409, 410, 503):
        response = await book(api, token, key="k")
        assert response.status_code == status
        assert response.json()["code"] == "INJECTED"
    assert len(await slots(api)) == len(SLOTS)
    # the queue is used up: the next request books
    assert (await book(api, token, key="k")).status_code == 201


async def test_an_injected_body(api: httpx.AsyncClient) -> None:
    await control(api, {"status": 503, "body": {"message": "maintenance"}})
    response = await book(api, await token_for(api, "19:00"))
    assert (response.status_code, response.json()) == (503, {"message": "maintenance"})


async def test_a_processed_fault_books_but_answers_the_fault(api: httpx.AsyncClient) -> None:
    await control(api, {"status": 503, "process": True})
    token = await token_for(api, "19:00")
    lost = await book(api, token, key="k1")
    assert lost.status_code == 503
    assert [s["time"] for s in await slots(api)] == ["18:00", "20:00", "21:00"]
    # a retry with the same key gets the booking that was made
    again = await book(api, token, key="k1")
    assert again.status_code == 200
    assert again.json()["time"] == "19:00"


async def test_faults_for_slots(api: httpx.AsyncClient) -> None:
    await control(api, {"status": 503}, path="/slots")
    failed = await api.get("/slots", params={"date": DATE})
    assert failed.status_code == 503
    assert len(await slots(api)) == len(SLOTS)


async def test_a_redirect_is_answered_not_followed(api: httpx.AsyncClient) -> None:
    await control(api, {"redirect": "/elsewhere"})
    response = await book(api, await token_for(api, "19:00"))
    assert response.status_code == 307
    assert response.headers["location"] == "/elsewhere"
    assert len(await slots(api)) == len(SLOTS)
    await control(api, {"redirect": "https://example.invalid/x", "status": 302}, path="/slots")
    moved = await api.get("/slots", params={"date": DATE})
    assert (moved.status_code, moved.headers["location"]) == (302, "https://example.invalid/x")


async def test_a_slow_response(api: httpx.AsyncClient) -> None:
    await control(api, {"delay_ms": 300})
    token = await token_for(api, "19:00")
    with pytest.raises(httpx.ReadTimeout):
        await api.post(
            "/bookings",
            json={"date": DATE, "slot_token": token},
            headers={"Idempotency-Key": "slow"},
            timeout=0.05,
        )
    # The API went on and booked the slot after its delay, though the client gave up.
    for _ in range(200):
        if len(await slots(api)) == len(SLOTS) - 1:
            break
        await asyncio.sleep(0.02)
    assert [s["time"] for s in await slots(api)] == ["18:00", "20:00", "21:00"]
    again = await api.post(
        "/bookings", json={"date": DATE, "slot_token": token}, headers={"Idempotency-Key": "slow"}
    )
    assert again.status_code == 200


async def test_a_slow_fault_answer(api: httpx.AsyncClient) -> None:
    await control(api, {"delay_ms": 100, "status": 503})
    response = await book(api, await token_for(api, "19:00"))
    assert response.status_code == 503
    assert response.elapsed.total_seconds() >= 0.1


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"next": {}},
        {"next": [{}]},
        {"next": [{"status": 99}]},
        {"next": [{"delay_ms": -1}]},
        {"next": [{"status": 503, "color": "red"}]},
        {"next": [{"status": 503}], "path": "/stats"},
        {"next": [{"redirect": ""}]},
        {"next": [{"status": 503, "process": "yes"}]},
    ],
)
async def test_a_bad_control_is_422(api: httpx.AsyncClient, body: Any) -> None:
    response = await api.post("/control", json=body)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_CONTROL"


async def test_reset_forgets_everything(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "19:00")
    await book(api, token, key="k")
    await control(api, {"status": 503})
    response = await api.post("/control/reset")
    assert response.status_code == 200
    assert await stats(api) == []
    assert len(await slots(api)) == len(SLOTS)
    assert (await book(api, token)).status_code == 410  # old tokens are gone
    assert (await book(api, await token_for(api, "19:00"), key="k")).status_code == 201


# --- stats --------------------------------------------------------------------------------------


async def test_stats_list_every_request_but_controls_and_stats(api: httpx.AsyncClient) -> None:
    token = await token_for(api, "19:00")
    await control(api, {"status": 503})
    await book(api, token, key="key-1")
    await book(api, token, key="key-1")
    booked = await book(api, token)
    await api.get("/bookings/bk_nope")
    await api.get("/nowhere")
    await api.get("/stats")
    assert booked.status_code == 409
    assert await stats(api) == [
        {"method": "GET", "path": "/slots", "idempotencyKey": None},
        {"method": "POST", "path": "/bookings", "idempotencyKey": "key-1"},
        {"method": "POST", "path": "/bookings", "idempotencyKey": "key-1"},
        {"method": "POST", "path": "/bookings", "idempotencyKey": None},
        {"method": "GET", "path": "/bookings/bk_nope", "idempotencyKey": None},
        {"method": "GET", "path": "/nowhere", "idempotencyKey": None},
    ]


async def test_each_app_has_its_own_state() -> None:
    async with (
        serve_booking_api() as first_url,
        serve_booking_api() as second_url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        assert first_url != second_url
        listed = await client.get(f"{first_url}/slots", params={"date": DATE})
        token = listed.json()["slots"][0]["token"]
        booked = await client.post(
            f"{first_url}/bookings", json={"date": DATE, "slot_token": token}
        )
        assert booked.status_code == 201
        elsewhere = await client.post(
            f"{second_url}/bookings", json={"date": DATE, "slot_token": token}
        )
        assert elsewhere.status_code == 410
        assert len((await client.get(f"{second_url}/stats")).json()["requests"]) == 1


async def test_mounted_under_a_prefix() -> None:
    booking = create_booking_app()
    host = Starlette(routes=[Mount("/demo/booking", app=booking)])
    async with (
        serve_booking_api(host) as base_url,
        httpx.AsyncClient(base_url=f"{base_url}/demo/booking", timeout=10) as client,
    ):
        listed = await client.get("/slots", params={"date": DATE})
        assert listed.status_code == 200
        token = listed.json()["slots"][1]["token"]
        await client.post("/control", json={"next": [{"redirect": "/elsewhere"}]})
        assert (await book(client, token)).status_code == 307
        assert (await book(client, token, key="k")).status_code == 201
        assert (await stats(client)) == [
            {"method": "GET", "path": "/slots", "idempotencyKey": None},
            {"method": "POST", "path": "/bookings", "idempotencyKey": None},
            {"method": "POST", "path": "/bookings", "idempotencyKey": "k"},
        ]


# --- the action set -----------------------------------------------------------------------------


def test_booking_yaml_compiles_with_no_problems() -> None:
    actions = load_action_set(BOOKING_YAML)
    assert (actions.id, actions.name) == ("booking", "Example booking")
    assert actions.base_url == "http://127.0.0.1:8000/demo/booking"
    assert list(actions.tools) == ["find_slots", "book_slot"]
    find_slots = actions.tool("find_slots")
    assert (find_slots.method, find_slots.path, find_slots.effect) == ("GET", "/slots", "read-only")
    book_slot = actions.tool("book_slot")
    assert (book_slot.method, book_slot.path, book_slot.effect) == (
        "POST",
        "/bookings",
        "side-effect",
    )
    assert book_slot.confirmation is not None
    assert book_slot.confirmation.required
    assert list(book_slot.confirmation.preview or {}) == ["date", "time", "notes"]
    assert book_slot.transport.retry_attempts == 3
    assert book_slot.transport.idempotency_header == "Idempotency-Key"
    assert book_slot.transport.idempotency_source == "generated"
    assert book_slot.recovery is not None
    assert book_slot.recovery.dependency == "availability"
    assert book_slot.recovery.statuses == (409, 410)
    availability = book_slot.dependencies["availability"]
    assert availability.tool == "find_slots"
    assert availability.select is not None
    assert availability.select.sensitive == (("token",),)
    assert set(book_slot.input_schema["properties"]) == {"date", "time", "notes"}


async def test_booking_action_set_takes_the_running_apis_url() -> None:
    async with serve_booking_api() as base_url:
        actions = booking_action_set(base_url)
        assert actions.base_url == base_url
        assert list(actions.tools) == ["find_slots", "book_slot"]
        # its find_slots request reaches the API
        tool = actions.tool("find_slots")
        async with httpx.AsyncClient(base_url=actions.base_url) as client:
            response = await client.request(tool.method, tool.path, params={"date": DATE})
        assert response.status_code == 200
    assert booking_action_set().base_url == "http://127.0.0.1:8000/demo/booking"
    assert booking_action_set("http://h:1/demo/booking/").base_url == "http://h:1/demo/booking"
    with pytest.raises(ActionConfigError) as caught:
        booking_action_set("ftp://example.com")
    assert "CONFIG_URL_INVALID" in str(caught.value)
