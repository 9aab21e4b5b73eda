"""The bytes of the resource blobs of an MLIR bytecode file.

The Python bindings can make a `dense_resource` blob from a buffer but cannot
give its bytes back; printing the module as text to read them (hex) costs
seconds for a large model. The blobs are plain byte ranges of the file, so they
are read here, without copying, from the layout in mlir/docs/BytecodeFormat.md:

    file      magic "ML\\xefR", version varint, producer string \\0, sections
    section   id byte (high bit: aligned), length varint,
              [alignment varint, 0xCB padding], data
    strings   count varint, sizes varint[] (in reverse order, each counting its \\0), data
    resource offsets   count of external groups varint, the external groups, then
              dialect groups to the end; a group is a key varint (string or dialect
              index), a count varint and per resource its key (string index)
              varint, its size in the resource section varint and its kind byte
    a blob    alignment varint, size varint, 0xCB padding, the bytes

Used only on bytecode the MLIR reader has accepted; anything unexpected gives
no blobs, and the caller keeps the resources as they are.
"""

from __future__ import annotations

STRING_SECTION, RESOURCE_SECTION, RESOURCE_OFFSET_SECTION = 0, 5, 6
BLOB_KIND = 0


class _Reader:
    def __init__(self, data: memoryview, start: int, end: int):
        self.data, self.position, self.end = data, start, end

    def at_end(self) -> bool:
        return self.position >= self.end

    def byte(self) -> int:
        if self.position >= self.end:
            raise ValueError("past the end")
        self.position += 1
        return self.data[self.position - 1]

    def varint(self) -> int:
        # PrefixVarInt: the trailing zeros of the first byte count the extra bytes.
        first = self.byte()
        if first & 1:
            return first >> 1
        extra = 8 if first == 0 else (first & -first).bit_length() - 1
        value = int.from_bytes(self.take(extra), "little")
        return value if first == 0 else ((value << 8) | first) >> (extra + 1)

    def take(self, count: int) -> memoryview:
        if self.position + count > self.end:
            raise ValueError("past the end")
        self.position += count
        return self.data[self.position - count:self.position]

    def align(self, alignment: int) -> None:
        while self.position % alignment:
            if self.byte() != 0xCB:
                raise ValueError("bad padding")


def _sections(data: memoryview) -> dict[int, tuple[int, int]]:
    reader = _Reader(data, 4, len(data))
    reader.varint()  # version
    while reader.byte() != 0:  # producer
        pass
    found = {}
    while not reader.at_end():
        ident = reader.byte()
        length = reader.varint()
        if ident & 0x80:
            reader.align(reader.varint())
        found[ident & 0x7F] = (reader.position, reader.position + length)
        reader.take(length)
    return found


def _strings(data: memoryview, start: int, end: int) -> list[str]:
    reader = _Reader(data, start, end)
    sizes = [reader.varint() for _ in range(reader.varint())]
    strings = []
    for size in reversed(sizes):
        strings.append(bytes(reader.take(size)[:-1]).decode("utf-8"))
    return strings


def resource_blobs(data: bytes) -> dict[str, memoryview]:
    """Key -> bytes (views into `data`) of every blob resource of a dialect
    (dense_resource blobs are the builtin dialect's); {} when the layout is not
    the expected one. A key found twice is left out: it would be ambiguous."""
    view = memoryview(data)
    try:
        sections = _sections(view)
        if RESOURCE_OFFSET_SECTION not in sections:
            return {}
        strings = _strings(view, *sections[STRING_SECTION])
        offsets = _Reader(view, *sections[RESOURCE_OFFSET_SECTION])
        resources = _Reader(view, *sections[RESOURCE_SECTION])
        blobs: dict[str, memoryview | None] = {}
        external_groups = offsets.varint()
        group = 0
        while not offsets.at_end():
            offsets.varint()  # the group's key: an external name or a dialect
            for _ in range(offsets.varint()):
                key, size, kind = strings[offsets.varint()], offsets.varint(), offsets.byte()
                entry_start = resources.position
                entry = _Reader(view, entry_start, entry_start + size)
                resources.take(size)
                if group < external_groups or kind != BLOB_KIND:
                    continue
                alignment, length = entry.varint(), entry.varint()
                entry.align(alignment)
                blobs[key] = entry.take(length) if key not in blobs else None
            group += 1
        return {key: blob for key, blob in blobs.items() if blob is not None}
    except (ValueError, IndexError, KeyError, UnicodeDecodeError):
        return {}
