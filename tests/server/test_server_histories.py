"""The history routes: create, list, read, update, delete, owners and admins, and what never
leaves the server (``promptIndex``, ``responseMessages``)."""

from __future__ import annotations

import asyncio

from server_helpers import Api, command

from examples import PLAN


async def create(api: Api, body: object = None, *, user: str = "alice") -> dict[str, object]:
    response = await api.post("/histories", body, user=user)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


async def test_create_with_an_empty_body(any_api: Api) -> None:
    for body in (None, {}):
        history = await create(any_api, body)
        assert history == {
            "id": history["id"],
            "userId": "alice",
            "agent": "helper",
            "title": None,
            "created": history["created"],
            "updated": history["updated"],
            "pendingAsk": None,
            "rows": [],
            "running": None,
        }
        assert str(history["created"]).endswith("Z")


async def test_create_sets_the_owner_and_drops_read_only_fields(api: Api) -> None:
    forged = {
        "userId": "bob",
        "pendingAsk": {"toolCallId": "call_x", "kind": "confirm", "promptIndex": 0},
        "id": "f" * 24,
        "rows": [{"type": "user", "text": "injected"}],
        "running": {"turnId": "f" * 24},
        "title": "Mine",
        "agent": "quiet",
    }
    history = await create(api, forged)
    assert history["userId"] == "alice"
    assert history["pendingAsk"] is None
    assert history["id"] != "f" * 24
    assert history["rows"] == []
    assert history["running"] is None
    assert history["title"] == "Mine"
    assert history["agent"] == "quiet"
    assert (await api.get("/histories/pendingAsks")).json()["data"] == []


async def test_create_rejects_unknown_fields_and_agents(api: Api) -> None:
    response = await api.post("/histories", {"titel": "typo"})
    assert response.status_code == 400
    assert response.json()["title"] == "Validation failed"
    assert list(response.json()["fields"]) == ["titel"]
    bad_title = await api.post("/histories", {"title": 5})
    assert bad_title.status_code == 400
    assert list(bad_title.json()["fields"]) == ["title"]
    agent = await api.post("/histories", {"agent": "nobody"})
    assert agent.status_code == 400
    assert agent.json()["title"] == "Unknown agent"
    not_object = await api.post("/histories", [1])
    assert not_object.status_code == 400


async def test_list_is_the_callers_newest_first(any_api: Api) -> None:
    first = await create(any_api, {"title": "one"})
    await asyncio.sleep(0.01)
    second = await create(any_api, {"title": "two"})
    await create(any_api, {"title": "bob's"}, user="bob")
    response = await any_api.get("/histories")
    listed = response.json()["data"]
    assert [h["id"] for h in listed] == [second["id"], first["id"]]
    assert all("rows" not in h for h in listed)
    assert [h["title"] for h in (await any_api.get("/histories", user="bob")).json()["data"]] == [
        "bob's"
    ]


async def test_read_with_rows_and_public_pending_ask(any_api: Api) -> None:
    stream = await any_api.say(command("ask_choice", PLAN))
    history = await any_api.history(stream.history_id)
    pending = history["pendingAsk"]
    assert set(pending) == {"toolCallId", "kind", "input", "simple", "created"}
    assert pending["input"] == PLAN
    rows = history["rows"]
    assert [r["type"] for r in rows] == ["user", "tool-call"]
    assert all(str(r["created"]).endswith("Z") for r in rows)
    listed = (await any_api.get("/histories")).json()["data"]
    assert set(listed[0]["pendingAsk"]) == set(pending)
    for response in (
        await any_api.get(f"/histories/{stream.history_id}"),
        await any_api.get("/histories"),
        await any_api.get("/histories/pendingAsks"),
    ):
        assert "promptIndex" not in response.text
        assert "responseMessages" not in response.text


async def test_update_title(api: Api) -> None:
    stream = await api.say(command("ask_choice", PLAN))
    path = f"/histories/{stream.history_id}"
    response = await api.request(
        "PATCH", path, json={"title": "Billing", "pendingAsk": None, "userId": "bob"}
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["title"] == "Billing"
    assert data["userId"] == "alice"
    assert data["pendingAsk"]["toolCallId"] == stream.ask["toolCallId"]  # dropped, not cleared
    assert "responseMessages" not in response.text
    cleared = await api.request("PATCH", path, json={"title": None})
    assert cleared.json()["data"]["title"] is None
    nothing = await api.request("PATCH", path, json={})
    assert nothing.status_code == 200
    agent = await api.request("PATCH", path, json={"agent": "quiet"})
    assert agent.status_code == 400
    assert list(agent.json()["fields"]) == ["agent"]
    long = await api.request("PATCH", path, json={"title": "x" * 201})
    assert long.status_code == 400
    # The ask is still pending and can be answered.
    answer = await api.answer(stream.history_id, stream.ask["toolCallId"], {"action": "decline"})
    assert answer.status == 200


async def test_delete_is_soft_and_hides_the_history(any_api: Api) -> None:
    stream = await any_api.say(command("ask_choice", PLAN))
    path = f"/histories/{stream.history_id}"
    response = await any_api.request("DELETE", path)
    assert response.status_code == 200
    assert response.json()["data"] == {"id": stream.history_id, "deleted": True}
    for method in ("GET", "PATCH", "DELETE"):
        gone = await any_api.request(method, path, json={"title": "x"})
        assert gone.status_code == 404
        assert gone.json()["title"] == "Document not found"
        assert gone.json()["code"] == "document-not-found"
    assert (await any_api.get("/histories")).json()["data"] == []
    assert (await any_api.get("/histories/pendingAsks")).json()["data"] == []
    assert await any_api.store.histories.get(stream.history_id) is None


async def test_owners_only_and_admins_read(api: Api) -> None:
    history = await create(api, {"title": "private"})
    path = f"/histories/{history['id']}"
    for method, body in (("GET", None), ("PATCH", {"title": "x"}), ("DELETE", None)):
        response = await api.request(method, path, user="bob", json=body)
        assert response.status_code == 403
        assert response.json()["title"] == "Not authorized to access this history"
    read = await api.get(path, user="root")
    assert read.status_code == 200
    assert read.json()["data"]["title"] == "private"
    for method, body in (("PATCH", {"title": "x"}), ("DELETE", None)):
        response = await api.request(method, path, user="root", json=body)
        assert response.status_code == 403
        assert "admin" in response.json()["detail"]
    assert (await api.history(str(history["id"])))["title"] == "private"


async def test_unknown_history(api: Api) -> None:
    response = await api.get("/histories/" + "0" * 24)
    assert response.status_code == 404
    assert response.json()["title"] == "Document not found"


def test_an_empty_history_body_needs_no_check() -> None:
    """`_history_body` takes ``{}`` without checking it: both schemas require no field."""
    from handrail.server.body_check import body_check

    for name in ("HistoryCreate", "HistoryUpdate"):
        assert body_check(name, ("assistant",)).violations({}) == []
