"""The file connectors' pure parts: offset validation, resume positions, line splitting, locked appends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparklink.connectors.file import (
    FileStreamSinkConnector,
    FileStreamSourceConnector,
    _lines,
    append_lines,
    resume_position,
)
from sparklink.connectors.file_lines import end_of_lines, split_lines

CONFIG = {"connector.class": "FileStreamSource", "file": "/data/in.txt", "topic": "lines"}


def _alter(offsets: list[tuple[Any, Any]]) -> bool:
    return FileStreamSourceConnector().alter_offsets(CONFIG, offsets)


def test_source_accepts_well_formed_offsets_and_tombstones() -> None:
    assert _alter([({"filename": "/data/in.txt"}, {"position": 0}), ({"filename": "/old.txt"}, None)]) is True
    assert _alter([({"filename": "/data/in.txt"}, {"position": 123456789012})]) is True


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ({"filename": "/a"}, {}, "contain the key 'position'"),
        ({"filename": "/a"}, {"offset": 3}, "contain the key 'position'"),
        ({"filename": "/a"}, {"position": "12"}, "expected to be an integer"),
        ({"filename": "/a"}, {"position": 1.5}, "expected to be an integer"),
        ({"filename": "/a"}, {"position": True}, "expected to be an integer"),
        ({"filename": "/a"}, {"position": -1}, "non-negative"),
        ({"file": "/a"}, {"position": 1}, "key 'filename'"),
        ({"filename": 7}, {"position": 1}, "key 'filename'"),
    ],
)
def test_source_refuses_malformed_offsets(partition: Any, offset: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _alter([(partition, offset)])


def test_sink_accepts_any_offsets_like_kafkas() -> None:
    config = {"connector.class": "FileStreamSink", "file": "/out.txt", "topics": "t"}
    partition = {"kafka_topic": "t", "kafka_partition": 0}
    assert FileStreamSinkConnector().alter_offsets(config, [(partition, {"kafka_offset": 5})]) is True


def test_resume_position_is_the_stored_position_of_this_file() -> None:
    resume = [({"filename": "/other"}, {"position": 9}), ({"filename": "/data/in.txt"}, {"position": 42})]
    assert resume_position("/data/in.txt", resume) == 42
    assert resume_position("/new.txt", resume) == 0
    with pytest.raises(ValueError, match="incorrect type"):
        resume_position("/a", [({"filename": "/a"}, {"position": "42"})])


def test_split_lines_knows_every_line_end_and_waits_for_an_unfinished_one() -> None:
    lines, ends = split_lines(b"a\nbb\r\nccc\rdd", base=100)
    assert lines == [b"a", b"bb", b"ccc"] and ends == [102, 106, 110]
    # A final "\r" may be the first half of "\r\n": not an end until the next byte is known ...
    assert split_lines(b"a\r") == ([], [])
    # ... unless the range is known to end after a line.
    assert split_lines(b"a\r", complete=True) == ([b"a"], [2])
    assert split_lines(b"a\nb\nc\n", limit=2) == ([b"a", b"b"], [2, 4])


def test_end_of_lines_counts_complete_lines_from_a_position(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    assert end_of_lines(str(path), 0, None) == 0  # no file yet: no data yet
    path.write_bytes(b"one\ntwo\r\nthree\npartial")
    assert end_of_lines(str(path), 0, None) == 15
    assert end_of_lines(str(path), 0, 2) == 9
    assert end_of_lines(str(path), 4, 1) == 9
    assert end_of_lines(str(path), 15, None) == 15


def test_append_lines_appends_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    assert append_lines(path, [b"a\n", b"b\n"]) == 4
    append_lines(path, iter([b"c\n"]))
    assert path.read_bytes() == b"a\nb\nc\n"


def test_sink_lines_come_a_whole_arrow_chunk_at_a_time_with_null_and_invalid_utf8_as_per_value() -> None:
    import pyarrow as pa

    text = pa.chunked_array([pa.array(["a", None, "héllo", ""]), pa.array([], pa.string())])
    assert [bytes(b) for b in _lines(text)] == [b"a\nnull\nh\xc3\xa9llo\n\n"]
    # A slice of a chunk starts at its own first value, not at the start of the shared buffer.
    sliced = pa.chunked_array([pa.array(["x", "y", "z"]).slice(1)])
    assert [bytes(b) for b in _lines(sliced)] == [b"y\nz\n"]
    raw = pa.chunked_array([pa.array([b"ok", None], pa.binary()), pa.array([b"bad \xff", b"fine"], pa.binary())])
    assert [bytes(b) for b in _lines(raw)] == [b"ok\nnull\n", "bad \ufffd\nfine\n".encode()]
