"""File names and cut uploads: one `clean_filename` for uploads and `files` answers, a name
that names no file refused, and a multipart body without its closing boundary never stored."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_helpers import blobs, db_state, problem
from server_helpers import FILES, Api, command

from handrail.asks.files import clean_filename

BOUNDARY = b"hr-boundary-7f3a"
TEXT = b"total 42.00\n"


def part(filename: bytes, data: bytes = TEXT, content_type: bytes = b"text/plain") -> bytes:
    return (
        b"--" + BOUNDARY + b"\r\n"
        b'Content-Disposition: form-data; name="file"; filename="' + filename + b'"\r\n'
        b"Content-Type: " + content_type + b"\r\n\r\n" + data + b"\r\n"
    )


def whole(filename: bytes) -> bytes:
    return part(filename) + b"--" + BOUNDARY + b"--\r\n"


async def upload_raw(api: Api, body: bytes) -> httpx.Response:
    headers = {"content-type": "multipart/form-data; boundary=" + BOUNDARY.decode()}
    return await api.request("POST", "/files/upload", content=body, headers=headers)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("receipt.png", "receipt.png"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\ann\\tax.pdf", "tax.pdf"),
        ("dir/", ""),
        (".", ""),
        ("..", ""),
        ("a/b/..", ""),
        ("...", ""),
        (" .. ", ""),
        (".bashrc", ".bashrc"),
        ("  notes .txt  ", "notes .txt"),
        ("line\nbreak\r.txt", "linebreak.txt"),
        ("nul\x00.txt", "nul.txt"),
        ("\u202egpj.exe", "gpj.exe"),  # a right-to-left override that hides the extension
        ("half\ud83d.txt", "half.txt"),
        ("\U0001f600 smile.png", "\U0001f600 smile.png"),
        ("\x00\x01\x02", ""),
        ("a" * 300 + ".txt", "a" * 255),
    ],
)
def test_clean_filename(raw: str, clean: str) -> None:
    assert clean_filename(raw) == clean


@pytest.mark.parametrize("name", [b".", b"..", b"a/..", b"...", b"\\..", b"\x01\x02"])
async def test_an_upload_named_as_a_folder_is_refused(
    any_api: Api, tmp_path: Path, name: bytes
) -> None:
    before = await db_state(any_api)
    response = await upload_raw(any_api, whole(name))
    answer = problem(response, 400)
    assert answer["title"] == "filename is required"
    assert "not a folder such as `..`" in answer["detail"]
    assert await db_state(any_api) == before
    assert blobs(tmp_path) == []


@pytest.mark.parametrize(
    ("name", "kind"),
    [(b"a\x00b.txt", "NUL character"), (b"x\xed\xa0\xbd.txt", "lone surrogate")],
)
async def test_an_upload_name_that_cannot_be_stored_is_refused(
    any_api: Api, tmp_path: Path, name: bytes, kind: str
) -> None:
    before = await db_state(any_api)
    answer = problem(await upload_raw(any_api, whole(name)), 400)
    assert answer["title"] == "Validation failed"
    assert answer["code"] == "INVALID_FORMAT"
    [field] = answer["fields"]
    assert field["path"] == "file.filename"
    assert kind in field["message"]
    assert await db_state(any_api) == before
    assert blobs(tmp_path) == []


async def test_an_upload_keeps_only_the_clean_name(any_api: Api) -> None:
    response = await upload_raw(any_api, whole("../../\u202etax\u0007.txt".encode()))
    assert response.status_code == 201, response.text
    data = response.json()["data"]
    assert data["filename"] == "tax.txt"
    record = await any_api.store.files.get(data["id"])
    assert record is not None
    assert record.filename == "tax.txt"


CUTS = {
    "in-the-data": part(b"cut.txt")[:-6],
    "after-the-part": part(b"cut.txt"),
    "before-the-final-dashes": part(b"cut.txt") + b"--" + BOUNDARY,
    "in-the-headers": part(b"cut.txt")[:40],
}


@pytest.mark.parametrize("body", CUTS.values(), ids=CUTS.keys())
async def test_an_upload_cut_before_its_closing_boundary_is_refused(
    any_api: Api, tmp_path: Path, body: bytes
) -> None:
    before = await db_state(any_api)
    answer = problem(await upload_raw(any_api, body), 400)
    assert answer["title"] == "The upload is not valid multipart/form-data"
    assert "closing boundary" in answer["detail"] or "headers" in answer["detail"]
    assert await db_state(any_api) == before
    assert blobs(tmp_path) == []
    assert (await upload_raw(any_api, whole(b"cut.txt"))).status_code == 201


def data_url_ref(filename: str) -> dict[str, Any]:
    return {
        "url": "data:text/plain;base64," + base64.b64encode(TEXT).decode(),
        "filename": filename,
        "mimeType": "text/plain",
        "size": len(TEXT),
    }


async def paused_on_files(api: Api) -> tuple[str, str]:
    stream = await api.say(command("ask_files", FILES))
    return stream.history_id, stream.ask["toolCallId"]


async def test_a_files_answer_stores_the_clean_name(any_api: Api) -> None:
    history_id, tool_call_id = await paused_on_files(any_api)
    envelope = {"action": "accept", "content": {"files": [data_url_ref("../../x/\u202ea.txt")]}}
    stream = await any_api.answer(history_id, tool_call_id, envelope)
    assert stream.status == 200, stream.problem
    assert "a.txt" in stream.text
    assert "\u202e" not in stream.text
    [result] = [
        row
        for row in await any_api.rows(history_id)
        if row["type"] == "tool-result" and row["toolCallId"] == tool_call_id
    ]
    assert result["result"]["content"]["files"] == [
        {"filename": "a.txt", "mimeType": "text/plain", "size": len(TEXT)}
    ]


@pytest.mark.parametrize("name", ["..", ".", "dir/", "\u0007"])
async def test_a_files_answer_whose_name_names_no_file_is_refused(any_api: Api, name: str) -> None:
    history_id, tool_call_id = await paused_on_files(any_api)
    before = await db_state(any_api)
    envelope = {"action": "accept", "content": {"files": [data_url_ref(name)]}}
    stream = await any_api.answer(history_id, tool_call_id, envelope)
    assert stream.status == 400
    assert stream.problem is not None
    assert stream.problem["title"] == "Invalid askResponse"
    [error] = stream.problem["fields"]
    assert error["path"] == "content.files[0].filename"
    assert error["code"] == "INVALID_FORMAT"
    assert await db_state(any_api) == before
    assert (await any_api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id
