"""Uploads and ``files`` answers: by fileId and by data URL, MIME mismatch, the cap, another
user's file; and no data URL or file byte in any stored row."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import FILES, Api, command, compact, sqlite_url, start_api
from sqlalchemy import create_engine, text

from handrail.runtime.agent import Agent

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
SECRET_TEXT = "zebra-receipt-7f3a: total 42.00"


async def upload(
    api: Api,
    data: bytes,
    filename: str = "receipt.png",
    content_type: str | None = "image/png",
    *,
    user: str = "alice",
) -> httpx.Response:
    file: tuple[Any, ...] = (
        (filename, data) if content_type is None else (filename, data, content_type)
    )
    return await api.request("POST", "/files/upload", user=user, files={"file": file})


async def paused_files(api: Api, args: dict[str, Any] = FILES) -> tuple[str, str]:
    stream = await api.say(command("ask_files", args))
    return stream.history_id, stream.ask["toolCallId"]


def files_answer(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"files": list(refs)}}


class TestUpload:
    async def test_upload(self, any_api: Api) -> None:
        response = await upload(any_api, PNG)
        assert response.status_code == 201
        data = response.json()["data"]
        assert data == {
            "id": data["id"],
            "filename": "receipt.png",
            "mimeType": "image/png",
            "size": len(PNG),
        }
        assert len(data["id"]) == 24
        record = await any_api.store.files.get(data["id"])
        assert record is not None
        assert record.owner_id == "alice"
        assert await any_api.store.files.read(record) == PNG

    @pytest.mark.parametrize(
        ("filename", "content_type", "expected"),
        [
            ("notes.txt", "Text/Plain; charset=UTF-8", "text/plain"),
            ("ledger.csv", None, "text/csv"),
            ("ledger.csv", "application/octet-stream", "text/csv"),
            ("export.json", "", "application/json"),
            ("photo.JPG", None, "image/jpeg"),
            ("mystery", None, "application/octet-stream"),
            ("../../etc/passwd.txt", "text/plain", "text/plain"),
        ],
    )
    async def test_mime_type_and_filename(
        self, api: Api, filename: str, content_type: str | None, expected: str
    ) -> None:
        response = await upload(api, b"a,b\n1,2\n", filename, content_type)
        assert response.status_code == 201, response.text
        data = response.json()["data"]
        assert data["mimeType"] == expected
        assert "/" not in data["filename"]

    async def test_over_the_cap(self, tmp_path: Path) -> None:
        agents = [Agent("small", asks={"maxFileSizeBytes": 1000})]
        async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents) as api:
            assert (await upload(api, b"x" * 1000, "a.txt", "text/plain")).status_code == 201
            response = await upload(api, b"x" * 1001, "a.txt", "text/plain")
            assert response.status_code == 413
            problem = response.json()
            assert problem["title"] == "File too large"
            assert problem["code"] == "FILE_TOO_LARGE"
            assert "the upload limit of 1.0 KB" in problem["detail"]
            huge = await upload(api, b"x" * 200_000, "a.txt", "text/plain")
            assert huge.status_code == 413

    async def test_max_upload_bytes_setting(self, tmp_path: Path) -> None:
        async with start_api(sqlite_url(tmp_path), tmp_path, max_upload_bytes=10) as api:
            assert (await upload(api, b"x" * 11, "a.txt", "text/plain")).status_code == 413

    async def test_bad_uploads(self, api: Api) -> None:
        not_multipart = await api.request("POST", "/files/upload", json={"file": "x"})
        assert not_multipart.status_code == 400
        assert not_multipart.json()["title"] == "The upload must be multipart/form-data"
        no_file = await api.request("POST", "/files/upload", data={"other": "x"}, files={})
        assert no_file.status_code == 400
        other_field = await api.request(
            "POST", "/files/upload", files={"document": ("a.txt", b"hi", "text/plain")}
        )
        assert other_field.status_code == 400
        assert other_field.json()["title"] == "file is required"
        unnamed = await api.request("POST", "/files/upload", files={"file": ("", b"hi")})
        assert unnamed.status_code == 400
        two = await api.request(
            "POST",
            "/files/upload",
            files=[
                ("file", ("a.txt", b"a", "text/plain")),
                ("file", ("b.txt", b"b", "text/plain")),
            ],
        )
        assert two.status_code == 400
        assert two.json()["title"] == "Send one file per upload"


class TestFilesAnswers:
    async def test_answer_by_file_id(self, any_api: Api) -> None:
        uploaded = (await upload(any_api, SECRET_TEXT.encode(), "r.txt", "text/plain")).json()
        ref = {**{k: uploaded["data"][k] for k in ("filename", "mimeType", "size")}}
        ref["fileId"] = uploaded["data"]["id"]
        history_id, tool_call_id = await paused_files(any_api)
        stream = await any_api.answer(history_id, tool_call_id, files_answer(ref))
        assert stream.status == 200, stream.problem
        stored = files_answer(
            {
                "fileId": ref["fileId"],
                "filename": "r.txt",
                "mimeType": "text/plain",
                "size": len(SECRET_TEXT),
            }
        )
        assert stream.text == f"ask_files returned: {compact(stored)}"
        assert (await any_api.rows(history_id))[2]["result"] == stored

    async def test_answer_by_data_url(self, any_api: Api) -> None:
        encoded = base64.b64encode(SECRET_TEXT.encode()).decode()
        ref = {
            "url": f"data:text/plain;base64,{encoded}",
            "filename": "r.txt",
            "mimeType": "text/plain",
            "size": len(SECRET_TEXT),
        }
        history_id, tool_call_id = await paused_files(any_api)
        stream = await any_api.answer(history_id, tool_call_id, files_answer(ref))
        assert stream.status == 200, stream.problem
        stored = files_answer(
            {"filename": "r.txt", "mimeType": "text/plain", "size": len(SECRET_TEXT)}
        )
        assert (await any_api.rows(history_id))[2]["result"] == stored

    async def test_mime_mismatch(self, api: Api) -> None:
        uploaded = (await upload(api, b"plain words", "fake.png", "image/png")).json()["data"]
        ref = {
            "fileId": uploaded["id"],
            "filename": "fake.png",
            "mimeType": "image/png",
            "size": uploaded["size"],
        }
        history_id, tool_call_id = await paused_files(api)
        stream = await api.answer(history_id, tool_call_id, files_answer(ref))
        assert stream.status == 400
        assert stream.problem is not None
        assert stream.problem["title"] == "Invalid askResponse"
        assert [(f["path"], f["code"]) for f in stream.problem["fields"]] == [
            ("content.files[0].mimeType", "MIME_MISMATCH")
        ]
        data_url = {
            "url": "data:image/png;base64," + base64.b64encode(b"plain words").decode(),
            "filename": "fake.png",
            "mimeType": "image/png",
            "size": 11,
        }
        again = await api.answer(history_id, tool_call_id, files_answer(data_url))
        assert again.status == 400
        assert again.problem is not None
        assert again.problem["fields"][0]["code"] == "MIME_MISMATCH"
        assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id

    async def test_another_users_file(self, api: Api) -> None:
        uploaded = (await upload(api, PNG, user="bob")).json()["data"]
        ref = {
            "fileId": uploaded["id"],
            "filename": "receipt.png",
            "mimeType": "image/png",
            "size": len(PNG),
        }
        history_id, tool_call_id = await paused_files(api)
        stream = await api.answer(history_id, tool_call_id, files_answer(ref))
        assert stream.status == 400
        assert stream.problem is not None
        assert [f["code"] for f in stream.problem["fields"]] == ["FILE_NOT_OWNED"]
        unknown = {**ref, "fileId": "f" * 24}
        missing = await api.answer(history_id, tool_call_id, files_answer(unknown))
        assert missing.status == 400
        assert missing.problem is not None
        assert [f["code"] for f in missing.problem["fields"]] == ["FILE_NOT_OWNED"]

    async def test_file_over_the_agents_cap(self, tmp_path: Path) -> None:
        agents = [Agent("small", asks={"maxFileSizeBytes": 100})]
        async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents) as api:
            history_id, tool_call_id = await paused_files(api)
            big = b"y" * 150
            ref = {
                "url": "data:text/plain;base64," + base64.b64encode(big).decode(),
                "filename": "big.txt",
                "mimeType": "text/plain",
                "size": 150,
            }
            stream = await api.answer(history_id, tool_call_id, files_answer(ref))
            assert stream.status == 400
            assert stream.problem is not None
            assert "FILE_TOO_LARGE" in [f["code"] for f in stream.problem["fields"]]


async def test_no_data_url_or_bytes_in_any_stored_row(tmp_path: Path) -> None:
    """Answer by data URL and by fileId, then read every table of the database directly."""
    url = sqlite_url(tmp_path)
    encoded = base64.b64encode(SECRET_TEXT.encode()).decode()
    async with start_api(url, tmp_path) as api:
        history_id, tool_call_id = await paused_files(api)
        ref = {
            "url": f"data:text/plain;base64,{encoded}",
            "filename": "r.txt",
            "mimeType": "text/plain",
            "size": len(SECRET_TEXT),
        }
        assert (await api.answer(history_id, tool_call_id, files_answer(ref))).status == 200
        uploaded = (await upload(api, SECRET_TEXT.encode(), "r.txt", "text/plain")).json()["data"]
        again = await api.say(command("ask_files", FILES), history_id)
        by_id = {k: uploaded[k] for k in ("filename", "mimeType", "size")} | {
            "fileId": uploaded["id"]
        }
        answer = await api.answer(history_id, again.ask["toolCallId"], files_answer(by_id))
        assert answer.status == 200
        # A rejected data URL answer is not stored either.
        third = await api.say(command("ask_files", FILES), history_id)
        bad = {**ref, "mimeType": "image/png", "url": f"data:image/png;base64,{encoded}"}
        assert (
            await api.answer(history_id, third.ask["toolCallId"], files_answer(bad))
        ).status == 400

    engine = create_engine(f"sqlite:///{tmp_path / 'handrail.db'}")
    dumped: list[str] = []
    with engine.connect() as connection:
        tables = [
            row[0]
            for row in connection.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))
        ]
        assert {"histories", "history_rows", "files", "requests"} <= set(tables)
        for table in tables:
            for row in connection.execute(text(f'SELECT * FROM "{table}"')):
                dumped.append(json.dumps([str(value) for value in row]))
    engine.dispose()
    everything = "\n".join(dumped)
    assert "r.txt" in everything  # the rows are there
    for needle in ("data:", "base64", encoded, SECRET_TEXT, "zebra"):
        assert needle not in everything, needle
