"""Files of a `files` answer: accepted types, data URLs, sniffing, the byte check and the
lines the model reads."""

from __future__ import annotations

import base64
import re
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.asks.errors import ASK_ERROR_CODES, AskValidationError, path_order
from handrail.asks.files import (
    ParsedDataUrl,
    accepted_file_mime_types,
    check_ask_file_bytes,
    cut_text_file,
    file_not_owned_error,
    file_summary_line,
    is_text_file_mime_type,
    normalize_mime_type,
    parse_ask_data_url,
    sniff_file_bytes,
)
from handrail.asks.limits import (
    ASK_FILE_ACCEPT,
    ASK_FILE_ACCEPT_MIME_TYPES,
    ASK_LIMITS,
    DEFAULT_MAX_FILE_SIZE,
    TEXT_MAX_BYTES,
)

# --- Real, minimal files, built here so that every signature is checked against real bytes.


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


# A 1x1 greyscale PNG: IHDR, one scanline (filter byte and one pixel) in IDAT, IEND.
PNG = (
    b"\x89PNG\r\n\x1a\n"
    + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    + _png_chunk(b"IDAT", zlib.compress(b"\x00\x00"))
    + _png_chunk(b"IEND", b"")
)
# SOI, an APP0 JFIF segment (length 16: version 1.1, no units, 1x1 density, no thumbnail), EOI.
JPEG = (
    b"\xff\xd8"
    + b"\xff\xe0"
    + struct.pack(">H", 16)
    + b"JFIF\x00"
    + bytes([1, 1, 0])
    + struct.pack(">HH", 1, 1)
    + bytes([0, 0])
    + b"\xff\xd9"
)
# A 1x1 GIF89a: header, screen descriptor with a two-colour table, one image, trailer.
GIF = (
    b"GIF89a"
    + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0)
    + b"\xff\xff\xff\x00\x00\x00"
    + b","
    + struct.pack("<HHHHB", 0, 0, 1, 1, 0)
    + b"\x02\x02\x44\x01\x00"
    + b";"
)
GIF87 = b"GIF87a" + GIF[6:]
_VP8L = b"VP8L" + struct.pack("<I", 5) + b"\x2f\x00\x00\x00\x00" + b"\x00"
WEBP = b"RIFF" + struct.pack("<I", 4 + len(_VP8L)) + b"WEBP" + _VP8L
PDF = (
    b"%PDF-1.4\n"
    b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
    b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
)

BINARY_FILES = {
    "image/png": PNG,
    "image/jpeg": JPEG,
    "image/gif": GIF,
    "image/webp": WEBP,
    "application/pdf": PDF,
}
TEXT_FILES = {
    "text/plain": "Total: 12,40 € — thanks!\n".encode(),
    "text/csv": b"date,amount\n2026-10-01,12.40\n",
    "application/json": b'{"total": 12.4, "items": ["tea", "cake"]}',
}
ALL_TYPES = [t for types in ASK_FILE_ACCEPT_MIME_TYPES.values() for t in types]


def _codes(errors: list[AskValidationError]) -> list[tuple[str, str]]:
    return [(error.path, error.code) for error in errors]


def _assert_well_worded(error: AskValidationError) -> None:
    assert error.code in ASK_ERROR_CODES
    assert error.message
    assert error.message.endswith(".")
    assert error.fix
    assert error.fix.endswith(".")
    assert error.fix[0].isupper()


# --- Accepted types


def test_accepted_types_follow_the_table_order_not_the_accept_order() -> None:
    assert accepted_file_mime_types(["json", "image"]) == [
        "image/jpeg",
        "image/png",
        "image/gif",
        "image/webp",
        "application/json",
    ]


def test_accepted_types_of_every_value_are_every_type_once() -> None:
    assert accepted_file_mime_types(list(ASK_FILE_ACCEPT) * 2) == ALL_TYPES
    assert len(set(ALL_TYPES)) == len(ALL_TYPES)


def test_accepted_types_ignore_unknown_values() -> None:
    assert accepted_file_mime_types(["pdf", "video", "IMAGE", ""]) == ["application/pdf"]
    assert accepted_file_mime_types([]) == []
    assert accepted_file_mime_types(iter(["csv"])) == ["text/csv"]


def test_accepted_types_of_a_single_string_mean_that_one_value() -> None:
    assert accepted_file_mime_types("pdf") == ["application/pdf"]


@pytest.mark.parametrize(
    ("mime_type", "expected"),
    [
        ("text/plain", True),
        ("text/csv", True),
        ("application/json", True),
        ("Text/CSV; charset=utf-8", True),
        ("image/png", False),
        ("application/pdf", False),
        ("text/html", False),
        ("", False),
    ],
)
def test_is_text_file_mime_type(mime_type: str, expected: bool) -> None:
    assert is_text_file_mime_type(mime_type) is expected


@pytest.mark.parametrize(
    ("mime_type", "expected"),
    [
        ("image/png", "image/png"),
        ("IMAGE/PNG", "image/png"),
        ("text/plain; charset=UTF-8", "text/plain"),
        ("  application/JSON ;x=y", "application/json"),
        ("", ""),
    ],
)
def test_normalize_mime_type(mime_type: str, expected: str) -> None:
    assert normalize_mime_type(mime_type) == expected


# --- Data URLs


def _data_url(mime_type: str, data: bytes) -> str:
    return f"data:{mime_type};base64,{base64.b64encode(data).decode()}"


def test_data_url_gives_its_type_and_bytes() -> None:
    parsed = parse_ask_data_url(_data_url("image/png", PNG))
    assert parsed == ParsedDataUrl("image/png", PNG)
    assert parsed is not None
    assert parsed.size == len(PNG)


def test_data_url_parameters_are_dropped_and_the_type_lowercased() -> None:
    parsed = parse_ask_data_url("data:Text/Plain;charset=utf-8;name=a.txt;BASE64,aGVsbG8=")
    assert parsed == ParsedDataUrl("text/plain", b"hello")


def test_data_url_with_an_empty_payload_is_empty_bytes() -> None:
    assert parse_ask_data_url("data:text/plain;base64,") == ParsedDataUrl("text/plain", b"")


def test_data_url_repr_leaves_the_bytes_out() -> None:
    parsed = parse_ask_data_url(_data_url("text/plain", b"secret receipt"))
    assert repr(parsed) == "ParsedDataUrl(mime_type='text/plain')"


@pytest.mark.parametrize(
    "url",
    [
        "data:text/plain,hello",  # not base64
        "data:text/plain;charset=utf-8,hello",  # not base64
        "data:text/plain;base64;charset=utf-8,aGk=",  # base64 is not the last parameter
        "data:text/plain;base64,aGk",  # missing padding
        "data:text/plain;base64,aGk=aGk=",  # data after the padding
        "data:text/plain;base64,=aGk",  # leading padding
        "data:text/plain;base64,aG k=",  # a space
        "data:text/plain;base64,aGk=\n",  # a line break
        "data:text/plain;base64,a-_=",  # URL-safe alphabet
        "data:text/plain;base64,aGk%3D",  # percent-encoded
        "data:text/plain;base64,é===",  # not ASCII
        "data:;base64,aGk=",  # no media type
        "data:text;base64,aGk=",  # no subtype
        "data:text/ plain;base64,aGk=",  # a space in the type
        "data:text/plain;;base64,aGk=",  # an empty parameter
        "data:text/plain;charset;base64,aGk=",  # a parameter without a value
        "data:text/plain;base64",  # no comma
        "https://example.com/receipt.png",
        "http://example.com/data:image/png;base64,aGk=",
        " data:text/plain;base64,aGk=",
        "",
        "garbage",
    ],
)
def test_other_strings_are_not_data_urls(url: str) -> None:
    assert parse_ask_data_url(url) is None


@pytest.mark.parametrize("value", [None, 42, 1.5, True, b"data:text/plain;base64,aGk=", [], {}])
def test_values_that_are_not_strings_are_not_data_urls(value: object) -> None:
    assert parse_ask_data_url(value) is None


@given(st.one_of(st.text(), st.binary(), st.integers(), st.none(), st.lists(st.text())))
def test_parse_ask_data_url_never_raises(value: object) -> None:
    result = parse_ask_data_url(value)
    assert result is None or isinstance(result, ParsedDataUrl)


@given(st.from_regex(r"\Adata:[a-zA-Z/;=,+.-]{0,30}(;base64)?,[A-Za-z0-9+/=\s%-]{0,40}\Z"))
def test_parse_ask_data_url_never_raises_on_near_misses(url: str) -> None:
    result = parse_ask_data_url(url)
    if result is not None:
        assert result.mime_type == result.mime_type.lower()
        assert ";" not in result.mime_type


@given(st.sampled_from(ALL_TYPES), st.binary())
def test_data_url_round_trip(mime_type: str, data: bytes) -> None:
    assert parse_ask_data_url(_data_url(mime_type, data)) == ParsedDataUrl(mime_type, data)


# --- Sniffing


@pytest.mark.parametrize(("mime_type", "data"), list(BINARY_FILES.items()))
def test_sniff_recognizes_each_signature(mime_type: str, data: bytes) -> None:
    assert sniff_file_bytes(data) == mime_type


def test_sniff_recognizes_gif87a() -> None:
    assert sniff_file_bytes(GIF87) == "image/gif"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x89PNG",  # a cut signature
        b"\xff\xd8",
        b"GIF88a" + GIF[6:],
        b"RIFF\x24\x00\x00\x00WAVEfmt ",  # RIFF, but audio
        b"RIFF\x00\x00\x00\x00WEB",  # too short for WEBP
        b"%PDF",
        b"hello",
        TEXT_FILES["application/json"],
    ],
)
def test_sniff_gives_none_for_anything_else(data: bytes) -> None:
    assert sniff_file_bytes(data) is None


# --- The byte check: types


@pytest.mark.parametrize(("mime_type", "data"), list({**BINARY_FILES, **TEXT_FILES}.items()))
def test_each_file_passes_as_its_own_type(mime_type: str, data: bytes) -> None:
    assert check_ask_file_bytes(data, index=0, mime_type=mime_type) == []


@pytest.mark.parametrize(
    ("actual", "declared"),
    [(actual, declared) for actual in BINARY_FILES for declared in ALL_TYPES if declared != actual],
)
def test_binary_bytes_declared_as_another_type_mismatch(actual: str, declared: str) -> None:
    data = BINARY_FILES[actual]
    errors = check_ask_file_bytes(data, index=2, mime_type=declared)
    assert _codes(errors) == [("content.files[2].mimeType", "MIME_MISMATCH")]
    _assert_well_worded(errors[0])
    assert actual in errors[0].message
    assert f"declare the type its bytes show ({actual})" in errors[0].fix


def test_png_declared_with_jpeg_bytes_is_worded_for_the_user() -> None:
    [error] = check_ask_file_bytes(JPEG, index=0, mime_type="image/png")
    assert error == AskValidationError(
        path="content.files[0].mimeType",
        code="MIME_MISMATCH",
        message="The file is declared as image/png, but its bytes are a JPEG image (image/jpeg).",
        fix="Upload the file again as a PNG image, or declare the type its bytes show "
        "(image/jpeg).",
    )


@pytest.mark.parametrize("declared", list(BINARY_FILES))
@pytest.mark.parametrize("actual", list(TEXT_FILES))
def test_text_declared_as_an_image_or_pdf_mismatches(declared: str, actual: str) -> None:
    errors = check_ask_file_bytes(TEXT_FILES[actual], index=1, mime_type=declared)
    assert _codes(errors) == [("content.files[1].mimeType", "MIME_MISMATCH")]
    _assert_well_worded(errors[0])
    assert "its bytes are text" in errors[0].message


@pytest.mark.parametrize("declared", list(BINARY_FILES))
def test_unknown_bytes_declared_as_an_image_or_pdf_mismatch(declared: str) -> None:
    errors = check_ask_file_bytes(b"\x00\x01\x02\xfe", index=0, mime_type=declared)
    assert _codes(errors) == [("content.files[0].mimeType", "MIME_MISMATCH")]
    assert "signature" in errors[0].message
    _assert_well_worded(errors[0])


@pytest.mark.parametrize("declared", list(BINARY_FILES))
def test_empty_bytes_are_no_image_or_pdf(declared: str) -> None:
    assert _codes(check_ask_file_bytes(b"", index=0, mime_type=declared)) == [
        ("content.files[0].mimeType", "MIME_MISMATCH")
    ]


def test_empty_text_and_csv_pass_but_empty_json_does_not() -> None:
    assert check_ask_file_bytes(b"", index=0, mime_type="text/plain") == []
    assert check_ask_file_bytes(b"", index=0, mime_type="text/csv") == []
    assert _codes(check_ask_file_bytes(b"", index=0, mime_type="application/json")) == [
        ("content.files[0].mimeType", "MIME_MISMATCH")
    ]


@pytest.mark.parametrize("declared", list(TEXT_FILES))
def test_text_with_a_nul_character_mismatches(declared: str) -> None:
    errors = check_ask_file_bytes(b'{"a": "b\x00"}', index=0, mime_type=declared)
    assert _codes(errors) == [("content.files[0].mimeType", "MIME_MISMATCH")]
    assert "NUL" in errors[0].message
    _assert_well_worded(errors[0])


@pytest.mark.parametrize("declared", list(TEXT_FILES))
@pytest.mark.parametrize(
    "data",
    [b'"caf\xe9"', b'"\xc3"', b'"\xed\xa0\x80"', b'"\xf8\x88\x80\x80\x80"'],
    ids=["latin-1", "cut-sequence", "surrogate", "five-byte"],
)
def test_text_that_is_not_utf8_mismatches(declared: str, data: bytes) -> None:
    errors = check_ask_file_bytes(data, index=0, mime_type=declared)
    assert _codes(errors) == [("content.files[0].mimeType", "MIME_MISMATCH")]
    assert "UTF-8" in errors[0].message
    _assert_well_worded(errors[0])


@pytest.mark.parametrize(
    "data",
    [b"{", b'{"a": 1,}', b"[1 2]", b"hello", b"NaN", b"[Infinity]", b"{'a': 1}", b"  "],
)
def test_json_that_does_not_parse_mismatches(data: bytes) -> None:
    errors = check_ask_file_bytes(data, index=0, mime_type="application/json")
    assert _codes(errors) == [("content.files[0].mimeType", "MIME_MISMATCH")]
    assert "JSON" in errors[0].message
    _assert_well_worded(errors[0])
    # The same bytes are fine as plain text.
    assert check_ask_file_bytes(data, index=0, mime_type="text/plain") == []


def test_json_parse_error_names_line_and_column() -> None:
    [error] = check_ask_file_bytes(b'{\n  "a": 1,\n}', index=0, mime_type="application/json")
    assert "(line 3, column 1)" in error.message


def test_json_nested_100000_deep_does_not_parse() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    errors = check_ask_file_bytes(deep, index=4, mime_type="application/json")
    assert _codes(errors) == [("content.files[4].mimeType", "MIME_MISMATCH")]
    assert "nested too deeply" in errors[0].message
    _assert_well_worded(errors[0])


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf" + b'{"a": 1}',  # a UTF-8 byte order mark
        b"1" * 5000,  # longer than Python's default int digit limit
        b'"\\ud800"',  # a lone surrogate escape, which JSON allows
        b"[1e400, -0, 0.5]",
        b"null",
    ],
    ids=["bom", "long-int", "lone-surrogate", "numbers", "null"],
)
def test_valid_json_edge_cases_pass(data: bytes) -> None:
    assert check_ask_file_bytes(data, index=0, mime_type="application/json") == []


@pytest.mark.parametrize("declared", ["IMAGE/PNG", "image/png; q=1", " image/png "])
def test_declared_type_is_normalized(declared: str) -> None:
    assert check_ask_file_bytes(PNG, index=0, mime_type=declared) == []


def test_text_with_a_charset_parameter_passes() -> None:
    data = TEXT_FILES["text/plain"]
    assert check_ask_file_bytes(data, index=0, mime_type="text/plain; charset=utf-8") == []


@pytest.mark.parametrize("declared", ["image/jpg", "application/zip", "text/html", "", "png"])
def test_unknown_declared_type_is_not_accepted(declared: str) -> None:
    errors = check_ask_file_bytes(b"hello", index=3, mime_type=declared)
    assert _codes(errors) == [("content.files[3].mimeType", "FILE_TYPE_NOT_ACCEPTED")]
    _assert_well_worded(errors[0])
    assert "application/json" in errors[0].fix


def test_unknown_declared_type_fix_names_the_type_the_bytes_show() -> None:
    [error] = check_ask_file_bytes(JPEG, index=0, mime_type="image/jpg")
    assert error.code == "FILE_TYPE_NOT_ACCEPTED"
    assert error.fix == "Declare the type its bytes show (image/jpeg)."


# --- The byte check: size


def test_size_cap_is_inclusive() -> None:
    data = b"a" * 50
    assert check_ask_file_bytes(data, index=0, mime_type="text/plain", max_file_size_bytes=50) == []
    errors = check_ask_file_bytes(
        data + b"a", index=1, mime_type="text/plain", max_file_size_bytes=50
    )
    assert _codes(errors) == [("content.files[1].size", "FILE_TOO_LARGE")]
    assert errors[0].message == "The file is 51 bytes, more than the limit of 50 bytes."
    _assert_well_worded(errors[0])


def test_default_cap_is_the_limits_default() -> None:
    assert ASK_LIMITS["files"]["defaultMaxFileSizeBytes"] == DEFAULT_MAX_FILE_SIZE
    at_cap = PNG + b"\x00" * (DEFAULT_MAX_FILE_SIZE - len(PNG))
    assert check_ask_file_bytes(at_cap, index=0, mime_type="image/png") == []
    errors = check_ask_file_bytes(at_cap + b"\x00", index=0, mime_type="image/png")
    assert _codes(errors) == [("content.files[0].size", "FILE_TOO_LARGE")]
    assert f"{DEFAULT_MAX_FILE_SIZE:,} bytes" in errors[0].message


def test_too_large_bytes_are_not_examined() -> None:
    errors = check_ask_file_bytes(JPEG, index=0, mime_type="image/png", max_file_size_bytes=3)
    assert _codes(errors) == [("content.files[0].size", "FILE_TOO_LARGE")]


def test_errors_are_sorted_by_path_then_code() -> None:
    errors = check_ask_file_bytes(
        b"hello", index=0, mime_type="application/zip", max_file_size_bytes=1
    )
    assert _codes(errors) == [
        ("content.files[0].mimeType", "FILE_TYPE_NOT_ACCEPTED"),
        ("content.files[0].size", "FILE_TOO_LARGE"),
    ]


@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.sampled_from([*BINARY_FILES.values(), *TEXT_FILES.values()]).flatmap(
            lambda head: st.binary(max_size=40).map(lambda tail: head + tail)
        ),
        st.text(max_size=200).map(str.encode),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: st.lists(inner) | st.dictionaries(st.text(max_size=5), inner),
        ).map(lambda value: repr(value).encode()),
    ),
    index=st.integers(min_value=0, max_value=20),
    mime_type=st.one_of(st.sampled_from(ALL_TYPES), st.text(max_size=30)),
    cap=st.one_of(st.none(), st.integers(min_value=0, max_value=400)),
)
def test_check_ask_file_bytes_never_raises(
    data: bytes, index: int, mime_type: str, cap: int | None
) -> None:
    errors = check_ask_file_bytes(data, index=index, mime_type=mime_type, max_file_size_bytes=cap)
    assert errors == sorted(errors, key=lambda e: (path_order(e.path), e.code))
    for error in errors:
        assert error.path.startswith(f"content.files[{index}].")
        assert error.code in {
            "FILE_TOO_LARGE",
            "FILE_TYPE_NOT_ACCEPTED",
            "MIME_MISMATCH",
        }
        _assert_well_worded(error)


# --- FILE_NOT_OWNED


def test_file_not_owned_error() -> None:
    error = file_not_owned_error(2)
    assert error.path == "content.files[2].fileId"
    assert error.code == "FILE_NOT_OWNED"
    assert "POST /api/files/upload" in error.fix
    assert "data URL" in error.fix
    _assert_well_worded(error)


def test_file_not_owned_error_names_another_upload_route() -> None:
    error = file_not_owned_error(0, upload_route="POST /v2/files/upload")
    assert "POST /v2/files/upload" in error.fix
    assert "/api/" not in error.fix


# --- What the model reads


def test_file_summary_line() -> None:
    line = file_summary_line(1, 2, "receipt.png", "image/png", 48213)
    assert line == "File 1 of 2: receipt.png (image/png, 48213 bytes)"


def test_file_summary_line_of_one_byte() -> None:
    assert (
        file_summary_line(2, 2, "a.txt", "text/plain", 1)
        == "File 2 of 2: a.txt (text/plain, 1 byte)"
    )


def test_file_summary_line_keeps_a_filename_on_its_line() -> None:
    line = file_summary_line(1, 1, "a\nFile 2 of 1: evil.txt\r\u2028x", "text/plain", 3)
    assert "\n" not in line
    assert "\r" not in line
    assert "\u2028" not in line
    assert line == "File 1 of 1: a File 2 of 1: evil.txt  x (text/plain, 3 bytes)"


def test_cut_text_file_keeps_a_short_file_whole() -> None:
    assert cut_text_file("café\n".encode()) == "café\n"
    assert cut_text_file(b"abc", max_bytes=3) == "abc"


def test_cut_text_file_cuts_before_a_character_that_straddles_the_boundary() -> None:
    data = ("a" * 9 + "é" + "b" * 5).encode()  # "é" is bytes 9 and 10
    assert len(data) == 16
    assert cut_text_file(data, max_bytes=10) == (
        "a" * 9 + "\n[The file is cut to its first 9 of 16 bytes.]"
    )
    assert cut_text_file(data, max_bytes=11) == (
        "a" * 9 + "é" + "\n[The file is cut to its first 11 of 16 bytes.]"
    )


@pytest.mark.parametrize("max_bytes", [2, 3, 4, 5])
def test_cut_text_file_never_splits_a_four_byte_character(max_bytes: int) -> None:
    data = ("ab" + "😀" + "cd").encode()  # the emoji is bytes 2 to 5
    kept = 2 if max_bytes < 6 else 6
    assert cut_text_file(data, max_bytes=max_bytes) == (
        "ab" + f"\n[The file is cut to its first {kept} of {len(data)} bytes.]"
    )


def test_cut_text_file_default_is_the_limits_text_max_bytes() -> None:
    assert ASK_LIMITS["files"]["textMaxBytes"] == TEXT_MAX_BYTES
    data = ("a" * (TEXT_MAX_BYTES - 1) + "é" + "b" * 50).encode()
    text = cut_text_file(data)
    assert text == "a" * (TEXT_MAX_BYTES - 1) + (
        f"\n[The file is cut to its first {TEXT_MAX_BYTES - 1} of {len(data)} bytes.]"
    )
    assert cut_text_file(b"a" * TEXT_MAX_BYTES) == "a" * TEXT_MAX_BYTES


def test_cut_text_file_note_is_exact() -> None:
    text = cut_text_file(b"x" * 150_000, max_bytes=102_400)
    assert text.endswith("\n[The file is cut to its first 102400 of 150000 bytes.]")
    assert re.fullmatch(r"x+\n\[The file is cut to its first \d+ of \d+ bytes\.\]", text)


def test_cut_text_file_refuses_a_negative_limit() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        cut_text_file(b"abc", max_bytes=-1)


@given(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=60),
    st.integers(min_value=0, max_value=80),
)
def test_cut_text_file_keeps_a_prefix_of_whole_characters(text: str, max_bytes: int) -> None:
    data = text.encode()
    result = cut_text_file(data, max_bytes=max_bytes)
    if len(data) <= max_bytes:
        assert result == text
        return
    head, note = result.rsplit("\n[The file is cut to its first ", 1)
    kept = len(head.encode())
    assert note == f"{kept} of {len(data)} bytes.]"
    assert text.startswith(head)
    assert max_bytes - 4 < kept <= max_bytes


@given(st.binary(max_size=60), st.integers(min_value=0, max_value=80))
def test_cut_text_file_never_raises(data: bytes, max_bytes: int) -> None:
    assert isinstance(cut_text_file(data, max_bytes=max_bytes), str)
