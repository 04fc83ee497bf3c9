"""HTTP/1.1 for the kit's fake servers, just enough: keep-alive, bodies by
``Content-Length`` or chunked, responses whole or chunked (an SSE stream of
unknown length). On trio streams; no HTTP library in the kit's servers."""

from __future__ import annotations

import trio

_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024
_STATUS_TEXT = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}


class Request:
    def __init__(self, method: str, target: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body


class Connection:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def _fill(self) -> bool:
        data = await self.stream.receive_some(65536)
        if not data:
            return False
        self.buffer += data
        return True

    async def _until(self, marker: bytes, cap: int) -> bytes | None:
        while (end := self.buffer.find(marker)) < 0:
            if len(self.buffer) > cap or not await self._fill():
                return None
        head = bytes(self.buffer[:end])
        del self.buffer[: end + len(marker)]
        return head

    async def _exactly(self, n: int) -> bytes | None:
        while len(self.buffer) < n:
            if not await self._fill():
                return None
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    async def read_request(self) -> Request | None:
        head = await self._until(b"\r\n\r\n", _MAX_HEAD)
        if head is None:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = [*lines[0].split(" ", 2), "", ""][:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size_line = await self._until(b"\r\n", 1024)
                if size_line is None:
                    return None
                size = int(size_line.split(b";")[0] or b"0", 16)
                if size == 0:
                    await self._until(b"\r\n", _MAX_HEAD)
                    break
                chunk = await self._exactly(size + 2)
                if chunk is None or len(body) + size > _MAX_BODY:
                    return None
                body += chunk[:size]
            return Request(method, target, headers, bytes(body))
        length = int(headers.get("content-length", "0") or 0)
        if length > _MAX_BODY:
            return None
        data = await self._exactly(length) if length else b""
        return None if data is None else Request(method, target, headers, data)

    async def respond(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        reason = _STATUS_TEXT.get(status, "Error")
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        await self.stream.send_all(head + body)

    async def start_stream(self) -> None:
        await self.stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )

    async def chunk(self, data: bytes) -> None:
        await self.stream.send_all(b"%x\r\n%s\r\n" % (len(data), data))

    async def end_stream(self) -> None:
        await self.stream.send_all(b"0\r\n\r\n")


__all__ = ["Connection", "Request"]
