"""The harness's bootstrap: one ``InputConfig`` in on stdin, one
``OutputConfig`` out on stdout, each a protobuf message behind a u32
little-endian length.

Two small messages do not justify a protobuf dependency (and the harness's
descriptors are not published apart from Google's SDK), so they are encoded
here by hand: varints, length-delimited fields and a map, per the protobuf
wire format. Field numbers are those of the harness 0.1.x
(``../shared/spec/localharness.md``); the contract suite catches a change.
"""

from __future__ import annotations

import struct

import msgspec

#: A bootstrap answer larger than this is not an ``OutputConfig``.
MAX_OUTPUT = 64 * 1024


class BootstrapError(Exception):
    """The harness did not answer its bootstrap as expected."""


class ClientInfo(msgspec.Struct, kw_only=True, frozen=True):
    language: str = "python"
    version: str = ""
    language_version: str = ""
    os: str = ""
    os_version: str = ""


class InputConfig(msgspec.Struct, kw_only=True, frozen=True):
    storage_directory: str
    port: int = 0
    bind_address: str = "127.0.0.1"
    client_info: ClientInfo = ClientInfo()
    env: dict[str, str] = msgspec.field(default_factory=dict)


class OutputConfig(msgspec.Struct, kw_only=True, frozen=True):
    port: int
    api_key: str


# -- the wire format --------------------------------------------------------------


def _varint(value: int) -> bytes:
    if value < 0:
        value &= (1 << 64) - 1  # int32/int64 negatives are ten-byte varints
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _bytes_field(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _str_field(field: int, text: str) -> bytes:
    return _bytes_field(field, text.encode("utf-8")) if text else b""


def _client_info(info: ClientInfo) -> bytes:
    return b"".join(
        _str_field(n, v)
        for n, v in enumerate((info.language, info.version, info.language_version, info.os, info.os_version), 1)
    )


def encode_input(config: InputConfig) -> bytes:
    """``InputConfig`` as protobuf (field order as declared; defaults omitted)."""
    parts = [_str_field(1, config.storage_directory)]
    if config.port:
        parts.append(_key(2, 0) + _varint(config.port))
    parts.append(_str_field(3, config.bind_address))
    parts.append(_bytes_field(4, _client_info(config.client_info)))
    parts.extend(_bytes_field(5, _str_field(1, k) + _str_field(2, v)) for k, v in sorted(config.env.items()))
    return b"".join(parts)


def frame(payload: bytes) -> bytes:
    """One bootstrap message on the pipe: u32 little-endian length, then the bytes."""
    return struct.pack("<I", len(payload)) + payload


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise BootstrapError("truncated varint in the harness's OutputConfig")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def decode_output(data: bytes) -> OutputConfig:
    """``OutputConfig``: ``port`` (1, int32) and ``api_key`` (2, string);
    unknown fields are skipped, as protobuf readers do."""
    port: int | None = None
    api_key = ""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
            if field == 1:
                port = value if value < 1 << 31 else value - (1 << 64)
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            chunk = data[pos : pos + length]
            if len(chunk) != length:
                raise BootstrapError("truncated field in the harness's OutputConfig")
            pos += length
            if field == 2:
                api_key = chunk.decode("utf-8", "replace")
        elif wire_type == 5:
            pos += 4
        elif wire_type == 1:
            pos += 8
        else:
            raise BootstrapError(f"unexpected protobuf wire type {wire_type} in the harness's OutputConfig")
    if port is None or not 0 < port < 65536:
        raise BootstrapError(f"the harness reported no usable port (got {port})")
    if not api_key:
        raise BootstrapError("the harness reported no API key for its WebSocket")
    return OutputConfig(port=port, api_key=api_key)


__all__ = [
    "MAX_OUTPUT",
    "BootstrapError",
    "ClientInfo",
    "InputConfig",
    "OutputConfig",
    "decode_output",
    "encode_input",
    "frame",
]
