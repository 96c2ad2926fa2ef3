# cython: language_level=3, binding=True, boundscheck=False, wraparound=False
"""Where decoded offsets of a JSON string token lie in its raw text, in one typed pass
over its characters, when that text is exactly what encoding its value again writes
(tokenmap.py, which holds the reference: py_canonical_edits).

A changed string with many escapes (a source file's `\\n`s) used to be encoded again
whole (C speed, but some 180 MB/s, ~5 ms of a 1 MB Claude Code body's masking). Where
its raw text is the canonical encoding of its value (json.dumps' for an ASCII token,
wire.text.json_escape's for one that is not) the untouched parts need no encoding: they
are the raw text as it is, and only the replacements are encoded. This pass says
whether the text is canonical and, if so, where each decoded offset lies in it.

Its source is compiled by setup.py (engine.NATIVE) and chosen by wire/tokenmap.py.
AsciiBytes (an ASCII str's characters as read-only bytes, no copy) is chosen by
rules/bigtext.py (ascii_bytes).
"""

from cpython.buffer cimport PyBuffer_FillInfo
from cpython.unicode cimport PyUnicode_1BYTE_KIND, PyUnicode_2BYTE_KIND, PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport uint8_t, uint16_t, uint64_t
from libc.string cimport memcpy

ctypedef uint8_t Py_UCS1
ctypedef uint16_t Py_UCS2


cdef inline int _hex4(int kind, void *data, Py_ssize_t r):
    """The code unit of the 4 lowercase hex digits at r (what both encoders write), or
    -1 for anything else (an upper-case digit is not canonical)."""
    cdef int u = 0, k, h
    cdef unsigned int c
    for k in range(4):
        c = PyUnicode_READ(kind, data, r + k)
        if 0x30 <= c <= 0x39:
            h = c - 0x30
        elif 0x61 <= c <= 0x66:
            h = c - 0x61 + 10
        else:
            return -1
        u = u * 16 + h
    return u


# Eight one-byte characters at a time (bit tricks, "Bit Twiddling Hacks": haszero,
# hasless, hasmore; each tells exactly whether some byte of the word is one): a word
# with no backslash and no character _bad names is passed whole. A word with one is read
# a character at a time, as before. The constants repeat one byte in each of the 8.
cdef extern from *:
    """
    #define DISGUISE_ONES 0x0101010101010101ULL
    #define DISGUISE_HIGHS 0x8080808080808080ULL
    #define DISGUISE_ONES16 0x0001000100010001ULL
    #define DISGUISE_HIGHS16 0x8000800080008000ULL
    """
    const uint64_t _ONES "DISGUISE_ONES"
    const uint64_t _HIGHS "DISGUISE_HIGHS"
    const uint64_t _ONES16 "DISGUISE_ONES16"
    const uint64_t _HIGHS16 "DISGUISE_HIGHS16"
    int _popcount "__builtin_popcountll"(uint64_t)


cdef inline bint _word_stops(uint64_t w, bint ascii_token):
    """Some byte of w is a backslash or a character _bad names (one-byte text: no
    surrogate): below 0x20, a quote, or (ascii_token) above 0x7E."""
    cdef uint64_t q = w ^ (_ONES * 0x22), b = w ^ (_ONES * 0x5C)
    cdef uint64_t hit = ((w - _ONES * 0x20) & ~w) | ((q - _ONES) & ~q) | ((b - _ONES) & ~b)
    if ascii_token:
        hit |= (w + _ONES * (0x7F - 0x7E)) | w
    return (hit & _HIGHS) != 0


cdef inline bint _word_stops2(uint64_t w):
    """The same for four two-byte characters (a token that is not ASCII: no character
    above 0x7E is bad there): a backslash, below 0x20, a quote or a surrogate."""
    cdef uint64_t q = w ^ (_ONES16 * 0x22), b = w ^ (_ONES16 * 0x5C)
    cdef uint64_t s = (w & (_ONES16 * 0xF800)) ^ (_ONES16 * 0xD800)
    cdef uint64_t hit = ((w - _ONES16 * 0x20) & ~w) | ((q - _ONES16) & ~q) | ((b - _ONES16) & ~b) | ((s - _ONES16) & ~s)
    return (hit & _HIGHS16) != 0


cdef inline bint _bad(unsigned int c, bint ascii_token):
    """c is not what the encoder writes as it is."""
    return c < 0x20 or c == 0x22 or (ascii_token and c > 0x7E) or 0xD800 <= c <= 0xDFFF


def canonical_edits(str body, str v, spans, bint ascii_token, Py_ssize_t base, encode, list seen=None):
    """The edits (start, end, encode(rep, ascii_token)) at base + the raw offsets in body
    (a JSON string token's text between its quotes, which decodes to v) of the spans
    (start, end, rep) in v; or None when body is not exactly json.dumps(v)[1:-1]
    (ascii_token) or json_escape(v), the spans are not in order, or they leave the
    length as it was. seen: gets, with edits, whether a `\\u` escape is in body."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(body)
    cdef int kind = PyUnicode_KIND(body)
    cdef void *data = PyUnicode_DATA(body)
    cdef const Py_UCS1 *p1 = <const Py_UCS1 *>data
    cdef const Py_UCS2 *p2 = <const Py_UCS2 *>data
    cdef Py_ssize_t r = 0, d = 0, s0, k = 0, nk = 2 * len(spans), want, last = 0
    cdef unsigned int c, e
    cdef uint64_t w
    cdef int u, lo
    cdef Py_ssize_t grow = 0
    cdef bint su = False
    wants = []
    for a, b, rep in spans:
        wants.append(a)
        wants.append(b)
        grow += len(rep) - (b - a)
    if not grow:
        return None  # perhaps no change at all: the caller looks (the whole token, as before)
    for x in wants:
        if x < last:
            return None
        last = x
    pos = []
    want = wants[0] if nk else -1
    while True:
        s0 = r  # a run of characters written as they are, up to the next escape
        if kind == PyUnicode_1BYTE_KIND:
            while r < n:
                if r + 8 <= n:
                    memcpy(&w, p1 + r, 8)
                    if not _word_stops(w, ascii_token):
                        r += 8
                        continue
                c = p1[r]
                if c == 0x5C:
                    break
                if _bad(c, ascii_token):
                    return None
                r += 1
        elif kind == PyUnicode_2BYTE_KIND and not ascii_token:
            while r < n:
                if r + 4 <= n:
                    memcpy(&w, p2 + r, 8)
                    if not _word_stops2(w):
                        r += 4
                        continue
                c = p2[r]
                if c == 0x5C:
                    break
                if _bad(c, False):
                    return None
                r += 1
        else:
            while r < n:
                c = PyUnicode_READ(kind, data, r)
                if c == 0x5C:
                    break
                if _bad(c, ascii_token):
                    return None
                r += 1
        while 0 <= want <= d + (r - s0):
            pos.append(s0 + (want - d))
            k += 1
            want = wants[k] if k < nk else -1
        d += r - s0
        if r >= n:
            break
        if r + 1 >= n:
            return None
        e = PyUnicode_READ(kind, data, r + 1)
        if e == 0x22 or e == 0x5C or e == 0x6E or e == 0x72 or e == 0x74 or e == 0x62 or e == 0x66:
            r += 2  # \" \\ \n \r \t \b \f: both encoders' short forms
            d += 1
            continue
        if e != 0x75 or r + 6 > n:  # \/ and the rest: not what an encoder writes
            return None
        u = _hex4(kind, data, r + 2)
        su = True
        if u < 0:
            return None
        if 0xD800 <= u <= 0xDBFF and r + 12 <= n and PyUnicode_READ(kind, data, r + 6) == 0x5C \
                and PyUnicode_READ(kind, data, r + 7) == 0x75:
            lo = _hex4(kind, data, r + 8)
            if 0xDC00 <= lo <= 0xDFFF:  # a pair: one character, written as a pair in ASCII only
                if not ascii_token:
                    return None
                r += 12
                d += 1
                continue
        if u < 0x20:
            if u == 0x08 or u == 0x09 or u == 0x0A or u == 0x0C or u == 0x0D:
                return None  # written short
        elif not (0xD800 <= u <= 0xDFFF or (ascii_token and u >= 0x7F)):
            return None  # written as it is (a lone surrogate is escaped by both)
        r += 6
        d += 1
    if k != nk or d != PyUnicode_GET_LENGTH(v):
        return None
    out = []
    made = {}
    k = 0
    for a, b, rep in spans:
        got = made.get(rep)
        if got is None:
            got = made[rep] = encode(rep, ascii_token)
        out.append((base + <Py_ssize_t>pos[k], base + <Py_ssize_t>pos[k + 1], got))
        k += 2
    if seen is not None:
        seen.append(su)
    return out


cdef class AsciiBytes:
    """An ASCII str's characters as read-only bytes, without a copy: the buffer is the
    str's own storage (one byte a character, each its ASCII byte), held alive by this
    object. What the scans of a big text read (rules/bigtext.py: ascii_bytes) where its
    encoded copy would be once more a 200 MB body."""

    cdef object text  # a str, or a subclass of it (fields.Num: a number as its text)

    def __cinit__(self, text):
        if not isinstance(text, str) or PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND or not text.isascii():
            raise ValueError("not an ASCII str")
        self.text = text

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, PyUnicode_DATA(self.text), PyUnicode_GET_LENGTH(self.text), 1, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


def char_offsets(bytes b, offsets):
    """Character offsets of increasing byte offsets into b (a str's UTF-8 bytes,
    surrogatepass: wire/text.py holds the reference, py_char_offsets), in one typed pass:
    the characters before an offset are the bytes there that are not continuation bytes
    (0x80-0xBF). None where an offset is not such a place (decreasing, past the end, or
    inside a character: the reference then says what it says, or raises)."""
    cdef const unsigned char *p = <const unsigned char *>b
    cdef Py_ssize_t n = len(b), last = 0, chars = 0, off, i
    cdef uint64_t w
    out = []
    for o in offsets:
        off = o
        if off < last or off > n or (off < n and (p[off] & 0xC0) == 0x80):
            return None
        i = last
        while i + 8 <= off:  # eight bytes at a time: a continuation byte is 10xxxxxx
            memcpy(&w, p + i, 8)
            chars += 8 - _popcount(w & ~(w << 1) & _HIGHS)
            i += 8
        while i < off:
            chars += (p[i] & 0xC0) != 0x80
            i += 1
        last = off
        out.append(chars)
    return out
