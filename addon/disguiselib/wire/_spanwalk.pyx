# cython: language_level=3, binding=True
"""The compiled span walk: jsonspan.walk (the reference, and the fallback where this
is not built) as one typed pass over the text's characters.

Everything jsonspan.walk does with regular expressions and searches per token —
skipping whitespace, finding the next structural character, the end of a string token
and whether it holds an escape, the end of a subtree a rule skips (json's raw_decode,
a second parse of it) — is a loop over the text's code points here; Python runs only
for what the rules and fn decide (resolve, child, fn, the edits). The walk's results
are the reference's, to the byte (tests/wire/test_spanwalk.py). A string value without
escapes is handed over as the parsed document's own string when that is the same text
(compared in C), not as a copy of it: a 200 MB string is not held twice. So is a string
with escapes whose parsed string is what its token decodes to (compared in C, decoding
as it goes: `_same_decoded`): source code in a tool result, every line a `\n`.

Its source is compiled by setup.py (engine.NATIVE) and chosen by wire/spanwalk.py.
"""

from cpython cimport array as carray
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_SIZE
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport uint16_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

import array
import json

from ..errors import MaskError
from . import jsonspan
from .text import LeftOut

cdef object _scanstring = json.decoder.scanstring
# A string token (or a string's text) this many bytes long at most is read byte by byte
# where one-byte text is searched (memchr's call costs more than a short loop).
cdef enum:
    _SHORT = 32
cdef object _apply = jsonspan.apply
cdef object _KEY = jsonspan.KEY
cdef object Tokens = jsonspan.Tokens
cdef object _base_resolve = jsonspan.Rule.resolve
cdef object _word_resolve = jsonspan.Word.resolve
cdef object _deep_child = jsonspan.Deep.child
cdef object _arr_child = jsonspan.Arr.child


cdef inline int _push(carray.array a, Py_ssize_t x) except -1:
    """a.append(x) for an array('q'): no int object made (a million strings: three each)."""
    cdef Py_ssize_t n = Py_SIZE(a)
    carray.resize_smart(a, n + 1)
    a.data.as_longlongs[n] = x
    return 0


cdef inline object _item(object seq, Py_ssize_t i):
    """seq[i], a list's read in place (no int made for i, no generic call: a million
    elements)."""
    if type(seq) is list and 0 <= i < PyList_GET_SIZE(seq):
        return <object>PyList_GET_ITEM(seq, i)
    return seq[i]


cdef inline object resolved(object rule, object value):
    """rule.resolve(value), without the call where the rule's class keeps Rule's own
    (the rule itself, but for a container where it has a `tree`) or Word's (for a str,
    its word): most rules, once for every string."""
    r = getattr(type(rule), "resolve")
    if r is _base_resolve:
        if isinstance(value, (dict, list)) and rule.tree is not None:
            return rule.resolve(value)
        return rule
    if r is _word_resolve and type(value) is str:
        return rule.word
    return rule.resolve(value)


cdef inline object fixed_child(object rule):
    """What rule.child(k) is for every k by its class's own child (Deep's: the rule;
    Arr's: its item), or None: then child() is called per member (1M elements: 1M calls)."""
    c = getattr(type(rule), "child")
    if c is _deep_child:
        return rule
    if c is _arr_child:
        return rule.item
    return None


cdef class _Frame:
    cdef object rule
    cdef object parsed
    cdef bint is_obj
    cdef object key
    cdef Py_ssize_t idx
    cdef object fixed  # what rule.child(k) is for every k, or None (fixed_child)
    # collect() with a raw scan, an array's: how many of its elements were left out (in
    # seen), the rule of the first, and whether another was read with another rule
    cdef Py_ssize_t out
    cdef object out_rule
    cdef bint mixed

    def __cinit__(self, rule, parsed, bint is_obj):
        self.rule = rule
        self.parsed = parsed
        self.is_obj = is_obj
        self.key = None
        self.idx = 0
        self.fixed = fixed_child(rule)

    cdef inline object child(self, object k):
        return self.fixed if self.fixed is not None else self.rule.child(k)

    cdef inline object child_at(self, Py_ssize_t i):
        """child(i) of an array, no int made for i where every element's rule is one
        (a million elements: a million ints made and freed)."""
        return self.fixed if self.fixed is not None else self.rule.child(i)


cdef class _Text:
    """s's code points, read without bounds beyond n (every read checks)."""
    cdef object s
    cdef int kind
    cdef void *data
    cdef Py_ssize_t n

    def __cinit__(self, str s):
        self.s = s
        self.kind = PyUnicode_KIND(s)
        self.data = PyUnicode_DATA(s)
        self.n = PyUnicode_GET_LENGTH(s)

    cdef inline Py_UCS4 at(self, Py_ssize_t i) except? 0xFFFFFFFF:
        if i < 0 or i >= self.n:
            raise IndexError("string index out of range")
        return PyUnicode_READ(self.kind, self.data, i)

    cdef inline Py_ssize_t ws(self, Py_ssize_t i) noexcept:
        """Past the JSON whitespace at i."""
        cdef Py_UCS4 c
        while i < self.n:
            c = PyUnicode_READ(self.kind, self.data, i)
            if c != 32 and c != 9 and c != 10 and c != 13:
                break
            i += 1
        return i

    cdef Py_ssize_t string_end(self, Py_ssize_t i, bint *escaped) except -1:
        """i: just past a string token's opening quote. Where its closing quote is; escaped
        says whether the token holds a backslash."""
        cdef Py_UCS4 c
        cdef const unsigned char *b
        cdef const void *q
        cdef const uint16_t *u2
        cdef const uint32_t *u4
        cdef Py_ssize_t stop
        escaped[0] = False
        if self.kind == 1:  # one byte a code point: memchr to the next quote
            b = <const unsigned char *>self.data
            # a short string (a million short elements): its bytes read one by one, not
            # two library calls (a quote or a backslash in the first SHORT bytes)
            stop = min(i + _SHORT, self.n)
            while i < stop and b[i] != 34 and b[i] != 92:
                i += 1
            if i < stop and b[i] == 34:
                return i
            while i < self.n:
                q = memchr(b + i, 34, self.n - i)
                if q == NULL:
                    break
                if memchr(b + i, 92, <const unsigned char *>q - (b + i)) == NULL:
                    return <const unsigned char *>q - b
                escaped[0] = True
                while i < self.n and b[i] != 34:
                    i += 2 if b[i] == 92 else 1
                if i < self.n:
                    return i
            raise MaskError(f"JSON ended inside a string at offset {self.n}")
        # two or four bytes a code point: a loop typed for the width (no switch on the
        # kind per character), to the next quote or backslash
        u2 = <const uint16_t *>self.data
        u4 = <const uint32_t *>self.data
        while i < self.n:
            if self.kind == 2:
                while i < self.n and u2[i] != 34 and u2[i] != 92:
                    i += 1
            else:
                while i < self.n and u4[i] != 34 and u4[i] != 92:
                    i += 1
            if i >= self.n:
                break
            c = PyUnicode_READ(self.kind, self.data, i)
            if c == 34:  # "
                return i
            escaped[0] = True  # a backslash: it and the character it escapes
            i += 2
        raise MaskError(f"JSON ended inside a string at offset {self.n}")

    cdef Py_ssize_t subtree_end(self, Py_ssize_t i) except -1:
        """i: a container's opening bracket. Past its closing bracket (strings stepped
        over whole; the text is JSON, parsed already)."""
        cdef Py_ssize_t depth = 0
        cdef Py_UCS4 c
        cdef bint esc
        while i < self.n:
            c = PyUnicode_READ(self.kind, self.data, i)
            if c == 34:
                i = self.string_end(i + 1, &esc) + 1
                continue
            if c == 123 or c == 91:  # { [
                depth += 1
            elif c == 125 or c == 93:  # } ]
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise MaskError(f"JSON ended inside a container at offset {self.n}")

    cdef Py_ssize_t token(self, Py_ssize_t i):
        """The next of `"{}[]:,` at or after i, or -1."""
        cdef Py_UCS4 c
        while i < self.n:
            c = PyUnicode_READ(self.kind, self.data, i)
            if c == 34 or c == 123 or c == 125 or c == 91 or c == 93 or c == 58 or c == 44:
                return i
            i += 1
        return -1

    cdef bint same(self, Py_ssize_t i, Py_ssize_t k, object v):
        """Is v a str holding exactly s[i:k]? (no copy of it)"""
        if type(v) is not str or PyUnicode_GET_LENGTH(v) != k - i:
            return False
        return _run_same(self, i, PyUnicode_KIND(v), PyUnicode_DATA(v), 0, k - i)


cdef inline bint _hexdigit(Py_UCS4 c):
    return 48 <= c <= 57 or 65 <= c <= 70 or 97 <= c <= 102


cdef inline bint _space(Py_UCS4 c):
    return c == 32 or 9 <= c <= 13


cdef inline bint _mailto(int kind, void *data, Py_ssize_t n, Py_ssize_t i):
    return (i + 6 < n and PyUnicode_READ(kind, data, i) == 109 and PyUnicode_READ(kind, data, i + 1) == 97
            and PyUnicode_READ(kind, data, i + 2) == 105 and PyUnicode_READ(kind, data, i + 3) == 108
            and PyUnicode_READ(kind, data, i + 4) == 116 and PyUnicode_READ(kind, data, i + 5) == 111
            and PyUnicode_READ(kind, data, i + 6) == 58)


cdef inline bint _slashes(int kind, void *data, Py_ssize_t n, Py_ssize_t i):
    return (i + 2 < n and PyUnicode_READ(kind, data, i) == 58 and PyUnicode_READ(kind, data, i + 1) == 47
            and PyUnicode_READ(kind, data, i + 2) == 47)


cdef inline bint _encoded_at(int kind, void *data, Py_ssize_t n, Py_ssize_t j):
    cdef Py_UCS4 c = PyUnicode_READ(kind, data, j)
    return c == 43 or (c == 37 and j + 2 < n and _hexdigit(PyUnicode_READ(kind, data, j + 1))
                       and _hexdigit(PyUnicode_READ(kind, data, j + 2)))


cdef inline int _hexval(Py_UCS4 c):
    cdef int x = <int>c
    if 48 <= x <= 57:
        return x - 48
    if 65 <= x <= 70:
        return x - 55
    if 97 <= x <= 102:
        return x - 87
    return -1


cdef Py_ssize_t _find(int kind, void *data, Py_ssize_t n, Py_ssize_t i, uint32_t ch):
    """The first ch at or after i, or -1: memchr in one-byte text, a typed loop in the
    others (not PyUnicode_READ's switch at every character)."""
    cdef const void *hit
    cdef const uint16_t *p2
    cdef const uint32_t *p4
    if i >= n:
        return -1
    if kind == 1:
        hit = memchr(<const char *>data + i, <int>ch, n - i)
        return -1 if hit == NULL else <const char *>hit - <const char *>data
    cdef uint64_t w, x, pat
    if kind == 2:
        p2 = <const uint16_t *>data
        pat = 0x0001000100010001ULL * ch
        while i + 4 <= n:  # four characters a word: one without ch is passed whole
            memcpy(&w, p2 + i, 8)
            x = w ^ pat
            if ((x - 0x0001000100010001ULL) & ~x & 0x8000800080008000ULL) != 0:
                break
            i += 4
        while i < n and p2[i] != ch:
            i += 1
    else:
        p4 = <const uint32_t *>data
        while i < n and p4[i] != ch:
            i += 1
    return i if i < n else -1


cdef Py_ssize_t _run_start(int kind, void *data, Py_ssize_t n, Py_ssize_t i):
    """Where the next run (wire/percent.runs: after a `://` or a `mailto:`) at or after i
    begins, or -1. Both end in a `:`, found by _find (source code's characters between
    them are not read one by one)."""
    cdef Py_ssize_t q
    while i < n:
        q = _find(kind, data, n, i, 58)
        if q < 0:
            return -1
        if q - 6 >= i and _mailto(kind, data, n, q - 6):  # (it begins first: `mailto://`)
            return q + 1
        if _slashes(kind, data, n, q):
            return q + 3
        i = q + 1
    return -1


cdef Py_ssize_t _whole_start(int kind, void *data, Py_ssize_t n):
    """Where the URL a string begins as begins after its scheme (`https://`, `mailto:`),
    or -1 (wire/percent.runs' first case)."""
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    if n == 0:
        return -1
    c = PyUnicode_READ(kind, data, 0)
    if 97 <= c <= 122 or 65 <= c <= 90:
        i = 1
        while i < n and i < 32:  # a scheme of 32 characters at most (percent._WHOLE)
            c = PyUnicode_READ(kind, data, i)
            if not (97 <= c <= 122 or 65 <= c <= 90 or 48 <= c <= 57 or c == 43 or c == 46 or c == 45):
                break
            i += 1
        if _slashes(kind, data, n, i):
            return i + 3
    if _mailto(kind, data, n, 0):
        return 7
    return -1


def decoded(str v):
    """wire/percent.py_decoded, compiled: each URL's escapes decoded (a run of them as
    UTF-8, surrogateescape) and its `+` a space; v itself when nothing is."""
    cdef int kind = PyUnicode_KIND(v)
    cdef void *data = PyUnicode_DATA(v)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(v)
    cdef Py_ssize_t a, j, seg = 0, k
    cdef Py_UCS4 c
    cdef int hi, lo
    cdef bint whole
    cdef list out = []
    cdef bytearray buf
    a = _whole_start(kind, data, n)
    whole = a >= 0
    if not whole:
        a = _run_start(kind, data, n, 0)
    while a >= 0:
        j = a
        while j < n:
            c = PyUnicode_READ(kind, data, j)
            if not whole and _space(c):
                break
            if c == 43:  # +
                out.append(v[seg:j])
                out.append(" ")
                j += 1
                seg = j
                continue
            if c == 37 and j + 2 < n:
                hi = _hexval(PyUnicode_READ(kind, data, j + 1))
                lo = _hexval(PyUnicode_READ(kind, data, j + 2))
                if hi >= 0 and lo >= 0:
                    out.append(v[seg:j])
                    buf = bytearray()
                    k = j
                    while k + 2 < n and PyUnicode_READ(kind, data, k) == 37:
                        hi = _hexval(PyUnicode_READ(kind, data, k + 1))
                        lo = _hexval(PyUnicode_READ(kind, data, k + 2))
                        if hi < 0 or lo < 0:
                            break
                        buf.append(hi * 16 + lo)
                        k += 3
                    out.append(buf.decode("utf-8", "surrogateescape"))
                    j = k
                    seg = j
                    continue
            j += 1
        if whole:
            break
        a = _run_start(kind, data, n, j)
    if not out:
        return v
    out.append(v[seg:])
    return "".join(out)


cdef bint _coded(int kind, void *data, Py_ssize_t n):
    """wire/percent.coded: a URL that holds a `%XX` escape or a `+` (all after the scheme
    of a string that begins as one; else each run after a `://` or a `mailto:`, up to
    whitespace): from `:` to `:` (_run_start), memchr's in one-byte text."""
    cdef Py_ssize_t j
    cdef const unsigned char *b
    if kind == 1 and n <= _SHORT:  # (a short text: read once, byte by byte)
        b = <const unsigned char *>data
        j = 0
        while j < n and b[j] != 37 and b[j] != 43:
            j += 1
        if j == n:
            return False
    elif kind == 1 and memchr(data, 37, n) == NULL and memchr(data, 43, n) == NULL:
        return False  # nothing a URL could hold encoded (a million short elements: first)
    j = _whole_start(kind, data, n)
    if j >= 0:  # all of it after the scheme
        while j < n:
            if _encoded_at(kind, data, n, j):
                return True
            j += 1
        return False
    j = _run_start(kind, data, n, 0)
    while j >= 0:
        while j < n and not _space(PyUnicode_READ(kind, data, j)):
            if _encoded_at(kind, data, n, j):
                return True
            j += 1
        j = _run_start(kind, data, n, j)
    return False


def coded(str v):
    """wire/percent.py_coded, compiled (the one scan _Plain makes): wire/percent.coded."""
    return _coded(PyUnicode_KIND(v), PyUnicode_DATA(v), PyUnicode_GET_LENGTH(v))


def shapes(str s, names):
    """base/masking.py_present_placeholders' answer, in one pass of memchr's (a `[` and a
    backslash at a time) rather than a regex reading every character and a substring
    search that stops at every `0` (a million short elements' 10 MB: ~9 ms): the set
    of `[NAME_N]` in s whose NAME is in names; None where s holds a `\\u00` escape of
    printable ASCII (_ASCII_ESCAPE), which the reference decodes and reads again."""
    cdef int kind = PyUnicode_KIND(s)
    cdef void *data = PyUnicode_DATA(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s), i, j, k, last
    cdef Py_UCS4 c
    i = _find(kind, data, n, 0, 92)
    while i >= 0:
        if (i + 5 < n and PyUnicode_READ(kind, data, i + 1) == 117 and PyUnicode_READ(kind, data, i + 2) == 48
                and PyUnicode_READ(kind, data, i + 3) == 48 and 50 <= PyUnicode_READ(kind, data, i + 4) <= 55
                and _hexdigit(PyUnicode_READ(kind, data, i + 5))):
            return None
        i = _find(kind, data, n, i + 1, 92)
    cdef set found = set()
    i = _find(kind, data, n, 0, 91)
    while i >= 0:
        # `[`, a name (a capital, then capitals, digits, `_`), `_`, a number (no leading 0), `]`:
        # the number holds no `_`, so the name is all up to the last `_`
        j = i + 1
        if j < n and 65 <= PyUnicode_READ(kind, data, j) <= 90:
            last = -1
            k = j
            while k < n:
                c = PyUnicode_READ(kind, data, k)
                if c == 95:
                    last = k
                elif not (65 <= c <= 90 or 48 <= c <= 57):
                    break
                k += 1
            if k < n and c == 93 and last > j and last + 1 < k and 49 <= PyUnicode_READ(kind, data, last + 1) <= 57:
                j = last + 2
                while j < k and 48 <= PyUnicode_READ(kind, data, j) <= 57:
                    j += 1
                if j == k:
                    if s[i + 1 : last] in names:
                        found.add(s[i : k + 1])
                    i = _find(kind, data, n, k + 1, 91)
                    continue
        i = _find(kind, data, n, i + 1, 91)
    return found


cdef class _Plain:
    """fields.plain(v, rule), answered in C where it plainly is (no JSON-looking start,
    nothing percent-encoded; in an unknown field, no `data:` start and not the base64
    alphabet alone); plain_fn, the reference, answers the rest. Rule classes are
    remembered per rule object."""
    cdef object plain_fn
    cdef dict rule_class
    cdef object last  # the rule class_of answered for last, and its answer (an array's elements)
    cdef int last_class

    def __cinit__(self, plain_fn):
        self.plain_fn = plain_fn
        self.rule_class = {}
        self.last = None
        self.last_class = -1

    cdef int class_of(self, object rule) except -1:
        """How plain() answers for rule's strings: 0 never plain (declared media, JSON
        text), 1 plain unless the string begins like JSON, 2 that, and not media sniffed
        in an unknown field."""
        if rule is self.last and self.last_class >= 0:
            return self.last_class
        got = self.rule_class.get(rule)
        if got is not None:
            self.last, self.last_class = rule, got
            return got
        cdef int c
        if rule.media is not None or rule.json_text:
            c = 0
        elif rule.kind == "unknown":
            c = 2
        else:
            c = 1
        self.rule_class[rule] = c
        self.last, self.last_class = rule, c
        return c

    cdef bint plain(self, str v, object rule) except -1:
        cdef int got = self.plain_at(PyUnicode_KIND(v), PyUnicode_DATA(v), PyUnicode_GET_LENGTH(v), rule)
        if got < 0:
            return self.plain_fn(v, rule)
        return got

    cdef int plain_at(self, int kind, const void *data, Py_ssize_t n, object rule) except -2:
        """plain() of the n characters at data (kind: their width; a string, or a string
        token's text without escapes): 1 or 0, or -1 where plain_fn has to answer."""
        cdef int cls = self.class_of(rule)
        if cls == 0:
            return 0
        cdef Py_ssize_t i = 0
        cdef Py_UCS4 c
        while i < n:
            c = PyUnicode_READ(kind, data, i)
            if c != 32 and c != 9 and c != 10 and c != 13:
                break
            i += 1
        if i < n and (c == 91 or c == 123):  # [ {
            return 0
        if _coded(kind, <void *>data, n):
            return 0
        if cls == 1 or n == 0:
            return 1
        c = PyUnicode_READ(kind, data, 0)
        if c == 100 or c == 68 or c > 127:  # d D, or not ASCII: maybe `data:`
            return -1
        if n < 16:
            return 1
        for i in range(n):
            c = PyUnicode_READ(kind, data, i)
            if not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 43 or c == 47 or c == 61 or c == 95 or c == 45):
                return 1  # a character no base64 holds
        return -1


cdef inline int _hex4(_Text t, Py_ssize_t i):
    """The value of the four hex digits at s[i:i+4] (in bounds), or -1."""
    cdef int v = 0, d, k, c
    for k in range(4):
        c = <int>PyUnicode_READ(t.kind, t.data, i + k)
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return -1
        v = v * 16 + d
    return v


cdef inline Py_ssize_t _backslash(_Text t, Py_ssize_t i, Py_ssize_t k):
    """Where the first backslash of s[i:k] is (k: none), in a loop typed for the width."""
    cdef const void *q
    cdef const uint16_t *u2
    cdef const uint32_t *u4
    if t.kind == 1:
        q = memchr(<const unsigned char *>t.data + i, 92, k - i)
        return k if q == NULL else <const unsigned char *>q - <const unsigned char *>t.data
    if t.kind == 2:
        u2 = <const uint16_t *>t.data
        while i < k and u2[i] != 92:
            i += 1
        return i
    u4 = <const uint32_t *>t.data
    while i < k and u4[i] != 92:
        i += 1
    return i


cdef inline bint _run_same(_Text t, Py_ssize_t i, int vk, const void *vd, Py_ssize_t j, Py_ssize_t m):
    """Are the m characters of s at i those of v (kind vk, data vd) at j? Compared at once
    (memcmp) where both are of one width, in a typed loop for two-byte text against a
    one-byte value (an ASCII string in a body that is not ASCII), else one by one."""
    cdef Py_ssize_t x
    cdef const uint16_t *t2
    cdef const unsigned char *v1
    if t.kind == vk:
        return memcmp(<const char *>vd + j * vk, <const char *>t.data + i * vk, m * vk) == 0
    if t.kind == 2 and vk == 1:
        t2 = <const uint16_t *>t.data + i
        v1 = <const unsigned char *>vd + j
        for x in range(m):
            if t2[x] != v1[x]:
                return False
        return True
    for x in range(m):
        if PyUnicode_READ(t.kind, t.data, i + x) != PyUnicode_READ(vk, vd, j + x):
            return False
    return True


cdef bint _same_decoded(_Text t, Py_ssize_t i, Py_ssize_t k, object v):
    """Is v a str holding exactly what the string token text s[i:k] (escapes in it: k is
    its closing quote) decodes to, as json's scanstring decodes it (a `\\u` high
    surrogate followed by a `\\u` low one: one code point; any other surrogate as it
    is)? Read in place, nothing made; False where the text is not one it reads."""
    if type(v) is not str:
        return False
    cdef int vk = PyUnicode_KIND(v)
    cdef void *vd = PyUnicode_DATA(v)
    cdef Py_ssize_t vn = PyUnicode_GET_LENGTH(v), j = 0, r
    cdef Py_UCS4 c, e
    cdef int u, lo
    while i < k:
        c = PyUnicode_READ(t.kind, t.data, i)
        if c == 92:  # a backslash
            if i + 1 >= k:
                return False
            e = PyUnicode_READ(t.kind, t.data, i + 1)
            if e == 117:  # u
                if i + 6 > k:
                    return False
                u = _hex4(t, i + 2)
                if u < 0:
                    return False
                i += 6
                if 0xD800 <= u <= 0xDBFF and i + 6 <= k and PyUnicode_READ(t.kind, t.data, i) == 92 \
                        and PyUnicode_READ(t.kind, t.data, i + 1) == 117:
                    lo = _hex4(t, i + 2)
                    if 0xDC00 <= lo <= 0xDFFF:
                        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                        i += 6
                c = <Py_UCS4>u
            else:
                if e == 34 or e == 92 or e == 47:  # " \ /
                    c = e
                elif e == 110:  # n
                    c = 10
                elif e == 116:  # t
                    c = 9
                elif e == 114:  # r
                    c = 13
                elif e == 98:  # b
                    c = 8
                elif e == 102:  # f
                    c = 12
                else:
                    return False
                i += 2
        else:  # a run of characters written as they are, to the next backslash: compared at once
            r = _backslash(t, i + 1, k)
            if r - i > vn - j or not _run_same(t, i, vk, vd, j, r - i):
                return False
            j += r - i
            i = r
            continue
        if j >= vn or PyUnicode_READ(vk, vd, j) != c:
            return False
        j += 1
    return j == vn


cdef class _Walk:
    cdef _Text t
    cdef str s
    cdef object fn
    cdef list edits
    cdef list stack
    cdef object marks
    cdef object where
    cdef object at
    # collect(): the strings selected, in bulk (fn is None then)
    cdef bint collecting
    cdef list vals
    cdef list rules
    cdef list keys
    cdef carray.array spans
    cdef list owners
    cdef list slots
    cdef list pieces
    cdef carray.array owner
    cdef object cur
    cdef object reads
    cdef _Plain plain
    cdef object context_fn
    cdef object ctx_key
    cdef tuple ctx
    # collect() with a raw scan: the strings it shows clean are left out (wire/spanwalk.py)
    cdef list seen  # the texts left out, in order (None: no raw scan)
    cdef carray.array hot  # (start, end) of each span the raw scan marked, in order
    cdef long long *hot_p
    cdef Py_ssize_t hot_n, hot_at
    cdef bint esc  # the string note() is handed was written with escapes
    # the rule value_at met last, and what it asks of it (an array's elements share one)
    cdef object r_last
    cdef bint r_self
    cdef bint r_tree  # the rule has a `tree` (a container in its place is read with it)
    cdef int r_string  # -1: not read yet

    cdef inline object resolved_here(self, object rule, object value):
        """resolved(rule, value), the class look-up made once for a run of one rule."""
        if rule is not self.r_last:
            self.r_last = rule
            self.r_self = getattr(type(rule), "resolve") is _base_resolve
            self.r_tree = self.r_self and rule.tree is not None
            self.r_string = -1  # (asked when needed: string_of)
        if self.r_self:
            if self.r_tree and isinstance(value, (dict, list)):
                return rule.resolve(value)
            return rule
        if type(value) is str and getattr(type(rule), "resolve") is _word_resolve:
            return rule.word
        return rule.resolve(value)

    cdef inline bint string_of(self, object rule) except -1:
        """rule.string, read once for a run of one rule (the one resolved_here met)."""
        if rule is not self.r_last:
            return bool(rule.string)
        if self.r_string < 0:
            self.r_string = bool(rule.string)
        return self.r_string

    cdef inline bint cold(self, Py_ssize_t i, Py_ssize_t end) noexcept:
        """Does no span the raw scan marked reach into the token s[i:end]? (Tokens come
        in order: the cursor only moves on.)"""
        cdef Py_ssize_t h = self.hot_at
        while h < self.hot_n and self.hot_p[2 * h + 1] <= i:
            h += 1
        self.hot_at = h
        return h >= self.hot_n or self.hot_p[2 * h] >= end

    cdef bint note(self, object v, object rule, Py_ssize_t i, Py_ssize_t end, object owner, object slot) except -1:
        """One selected string, collected: its token, its key, what reading it reads
        (no tuple made per string: the garbage collector would walk them all). With a
        raw scan (seen), a string read as it is and alone (a key, or a value without
        one), written without escapes, that no marked span reaches into is only listed
        in seen: its text is bytes of the body the scan read (spanwalk.py_collect).
        True where it was (left out)."""
        cdef list pieces = self.pieces
        cdef Py_ssize_t n = len(pieces), t = len(self.vals)
        if self.seen is not None and not self.esc:
            if rule is _KEY:
                if self.cold(i, end):
                    self.cur = v
                    self.seen.append(v)
                    return True
            elif self.cur is None and self.cold(i, end) and self.plain.plain(v, rule):
                self.seen.append(v)
                return True
        _push(self.spans, i)
        _push(self.spans, end)
        if self.owners is not None:
            self.owners.append(owner)
            self.slots.append(slot)
        cdef object key
        if rule is _KEY:
            key = None
            self.cur = v
            pieces.append(v)
        else:
            key = self.cur
            self.cur = None
            if self.plain.plain(v, rule):
                if key is None:
                    pieces.append(v)
                else:
                    if key is not self.ctx_key:
                        self.ctx = self.context_fn(key)
                        self.ctx_key = key
                    pieces.append(self.ctx[0] + v + self.ctx[1])
            else:
                self.reads(v, rule, key, pieces)
        self.vals.append(v)
        self.rules.append(rule)
        self.keys.append(key)
        if self.owner is not None:
            n = len(pieces) - n
            while n > 0:
                _push(self.owner, t)
                n -= 1
        return False

    cdef Py_ssize_t left_out(self, Py_ssize_t i, object rule, object parsed) except -2:
        """The array at i (rule's, parsed: its list) left out whole where every element is
        a string note() would leave out, read with one rule: one LeftOut in seen, what
        the element by element walk lists for it (run(): `]`), made from the text alone
        (no element's object read but where plain_fn has to answer). Where it ends; -1
        where the array is not so (the walk reads it element by element)."""
        cdef object er
        cdef Py_ssize_t j, k, count = 0, hot_at = self.hot_at
        cdef int got
        cdef bint escaped
        if type(parsed) is not list or PyList_GET_SIZE(parsed) == 0:
            return -1
        er = fixed_child(rule)  # each element's rule, the same for every string
        if er is None:
            return -1
        r = getattr(type(er), "resolve")
        if r is _word_resolve:
            er = er.word
        elif r is not _base_resolve:
            return -1
        if not er.string or self.plain.class_of(er) == 0:
            return -1
        j = self.t.ws(i + 1)
        while True:
            if j >= self.t.n or PyUnicode_READ(self.t.kind, self.t.data, j) != 34:
                break
            k = self.t.string_end(j + 1, &escaped)
            if escaped or not self.cold(j, k + 1):
                break
            got = self.plain.plain_at(self.t.kind, <char *>self.t.data + (j + 1) * self.t.kind, k - j - 1, er)
            if got < 0:
                if count >= PyList_GET_SIZE(parsed):
                    break
                v = <object>PyList_GET_ITEM(parsed, count)
                got = 1 if type(v) is str and self.plain.plain_fn(v, er) else 0
            if not got:
                break
            count += 1
            j = self.t.ws(k + 1)
            if j < self.t.n and PyUnicode_READ(self.t.kind, self.t.data, j) == 44:  # ,
                j = self.t.ws(j + 1)
                continue
            if j < self.t.n and PyUnicode_READ(self.t.kind, self.t.data, j) == 93 and count == PyList_GET_SIZE(parsed):
                self.seen.append(LeftOut(parsed, er, count))
                return j + 1
            break
        self.hot_at = hot_at  # (read again, element by element)
        return -1

    cdef tuple place(self):
        if not self.stack:
            return (None, 0, False)
        cdef _Frame f = self.stack[-1]
        return (f.parsed, f.key if f.is_obj else f.idx, False)

    cdef Py_ssize_t value_at(self, Py_ssize_t i, object rule, object parsed) except -1:
        """Handle the value that starts at or after i; return where scanning goes on."""
        cdef Py_UCS4 c
        cdef Py_ssize_t k, end, j
        cdef bint escaped
        cdef _Frame f
        cdef str s = self.s
        while True:
            i = self.t.ws(i)
            c = self.t.at(i)
            rule = self.resolved_here(rule, parsed)
            if c == 34:
                k = self.t.string_end(i + 1, &escaped)
                end = k + 1
                if not self.string_of(rule):
                    self.cur = None
                    return end
                if escaped:
                    if _same_decoded(self.t, i + 1, k, parsed):
                        v = parsed
                    else:
                        v, end = _scanstring(s, i + 1)
                elif self.t.same(i + 1, k, parsed):
                    v = parsed
                else:
                    v = s[i + 1 : k]
                if self.collecting:
                    self.esc = escaped
                    if self.stack:
                        f = self.stack[-1]
                        # (the slot is kept only with places: no int made an element otherwise)
                        slot = (f.key if f.is_obj else f.idx) if self.owners is not None else None
                        if self.note(v, rule, i, end, f.parsed, slot) and not f.is_obj:
                            if f.out == 0:
                                f.out_rule = rule
                            elif rule is not f.out_rule:
                                f.mixed = True
                            f.out += 1
                    else:
                        self.note(v, rule, i, end, None, 0)
                    return end
                if self.where is not None:
                    self.where.append((i, end))
                    if self.at is not None:
                        self.at.append(self.place())
                new = self.fn(v, rule)
                if new is not v:  # v itself: nothing to record (apply's new != v)
                    _apply(s, i, end, v, new, self.edits)
                return end
            # a key is read with its member's string value only (fields.walk): not with
            # the strings of an array or object that is its value, nor with a string
            # that comes after a value of another kind
            self.cur = None
            if c == 123 or c == 91:
                if rule.skip:
                    return self.t.subtree_end(i)
                if self.marks is not None and rule.mark is not None:
                    self.marks.append((rule.mark, i))
                if c == 91 and self.seen is not None:
                    j = self.left_out(i, rule, parsed)
                    if j >= 0:
                        return j
                f = _Frame(rule, parsed, c == 123)
                self.stack.append(f)
                if c == 91:
                    j = self.t.ws(i + 1)
                    if self.t.at(j) != 93:
                        i, rule, parsed = j, f.child_at(0), _item(parsed, 0)
                        continue
                return i + 1
            return i  # number, true, false, null: the token search steps over it

    cdef run(self, object doc, object root):
        cdef Py_ssize_t i, j, k, end
        cdef Py_UCS4 c
        cdef _Frame f
        cdef bint escaped
        cdef str s = self.s
        i = self.value_at(0, root, doc)
        while self.stack:
            j = self.t.token(i)
            if j < 0:
                raise MaskError(f"JSON ended inside a container at offset {self.t.n}")
            c = PyUnicode_READ(self.t.kind, self.t.data, j)
            f = self.stack[-1]
            if c == 34:  # only a key reaches here: values are consumed by value_at
                k = self.t.string_end(j + 1, &escaped)
                if escaped:
                    key, end = _scanstring(s, j + 1)
                else:
                    key, end = s[j + 1 : k], k + 1
                f.key = key
                if f.rule.keys and key not in f.rule.known:
                    if self.collecting:
                        self.esc = escaped
                        self.note(key, _KEY, j, end, f.parsed, key)
                    else:
                        if self.where is not None:
                            self.where.append((j, end))
                            if self.at is not None:
                                self.at.append((f.parsed, key, True))
                        new = self.fn(key, _KEY)
                        if new is not key:
                            _apply(s, j, end, key, new, self.edits)
                i = end
            elif c == 58:  # :
                i = self.value_at(j + 1, f.child(f.key), f.parsed[f.key])
            elif c == 44:  # ,
                if f.is_obj:
                    i = j + 1
                else:
                    f.idx += 1
                    i = self.value_at(j + 1, f.child_at(f.idx), _item(f.parsed, f.idx))
            elif c == 125 or c == 93:
                self.stack.pop()
                if f.out > 0 and not f.mixed and type(f.parsed) is list and f.out == PyList_GET_SIZE(f.parsed):
                    # every element left out, read with one rule: one LeftOut in their place
                    del self.seen[len(self.seen) - f.out :]
                    self.seen.append(LeftOut(f.parsed, f.out_rule, f.out))
                i = j + 1
            else:  # "{" or "[" can only appear as a value, which value_at consumed
                raise MaskError(f"unexpected {chr(c)!r} at offset {j}")


def walk(str s, doc, root, fn, marks=None, where=None, at=None):
    """jsonspan.walk, compiled: the same edits, marks, where and at."""
    cdef _Walk w = _Walk.__new__(_Walk)
    w.t = _Text(s)
    w.s = s
    w.fn = fn
    w.edits = []
    w.stack = []
    w.marks = marks
    w.where = where
    w.at = at
    w.run(doc, root)
    return w.edits


def collect(str s, doc, root, list pieces, reads, plain, context, owner=None, bint places=False, hot=None,
            list seen=None):
    """spanwalk.py_collect, compiled: every string root's rules select, in bulk, with no
    Python call per string but for those plain() does not settle here (see _Walk.plain)
    and those read otherwise than as they are (reads). owner: an array('q'), or None;
    hot and seen: see py_collect."""
    cdef _Walk w = _Walk.__new__(_Walk)
    w.t = _Text(s)
    w.s = s
    w.fn = None
    w.edits = []
    w.stack = []
    w.marks = None
    w.where = None
    w.at = None
    w.collecting = True
    w.vals = []
    w.rules = []
    w.keys = []
    w.spans = array.array('q')
    w.owners = [] if places else None
    w.slots = [] if places else None
    w.pieces = pieces
    w.owner = owner
    w.cur = None
    w.reads = reads
    w.plain = _Plain(plain)
    w.context_fn = context
    w.ctx_key = None
    w.ctx = None
    w.seen = seen
    w.hot_n = w.hot_at = 0
    w.esc = False
    if seen is not None:
        if hot is None:
            raise TypeError("collect: seen needs the raw scan's hot spans")
        w.hot = hot
        w.hot_p = w.hot.data.as_longlongs
        w.hot_n = len(w.hot) // 2
    w.run(doc, root)
    return Tokens(w.vals, w.rules, w.keys, w.spans, w.owners, w.slots)


def members(str s):
    """wire/spanwalk.py_members, compiled: (starts, keys) of the object s is the text of,
    one loop over its characters (a string token is passed by _find, its quotes and
    backslashes only are read)."""
    cdef int kind = PyUnicode_KIND(s)
    cdef void *data = PyUnicode_DATA(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
    cdef Py_ssize_t i = 0, q, b
    cdef Py_ssize_t depth = 0
    cdef bint key_next = False
    cdef Py_UCS4 c
    starts = array.array('q')
    keys = []
    while i < n:
        c = PyUnicode_READ(kind, data, i)
        if c == 34:  # a string token: to its closing quote (one no odd run of backslashes escapes)
            q = i
            while True:
                q = _find(kind, data, n, q + 1, 34)
                if q < 0:
                    return starts, keys
                b = q - 1
                while b > i and PyUnicode_READ(kind, data, b) == 92:
                    b -= 1
                if (q - 1 - b) % 2 == 0:
                    break
            if depth == 1 and key_next:
                starts.append(i)
                keys.append(_scanstring(s, i + 1)[0])
                key_next = False
            i = q + 1
            continue
        if c == 123 or c == 91:
            if depth == 0 and c == 91:
                break  # not an object
            depth += 1
            key_next = depth == 1
        elif c == 125 or c == 93:
            depth -= 1
            if depth == 0:
                break
        elif c == 44 and depth == 1:  # a comma between two members
            key_next = True
        i += 1
    return starts, keys


def elements(str s, Py_ssize_t i):
    """wire/spanwalk.py_elements, compiled: (starts, end) of the array whose `[` is s[i],
    one loop over its characters (a string token passed by _find, as members does)."""
    cdef int kind = PyUnicode_KIND(s)
    cdef void *data = PyUnicode_DATA(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
    cdef Py_ssize_t q, b
    cdef Py_ssize_t depth = 0
    cdef bint want = False
    cdef Py_UCS4 c
    starts = array.array('q')
    while i < n:
        c = PyUnicode_READ(kind, data, i)
        if c == 34:  # a string token: to its closing quote (one no odd run of backslashes escapes)
            if depth == 1 and want:
                starts.append(i)
                want = False
            q = i
            while True:
                q = _find(kind, data, n, q + 1, 34)
                if q < 0:
                    return starts, -1
                b = q - 1
                while b > i and PyUnicode_READ(kind, data, b) == 92:
                    b -= 1
                if (q - 1 - b) % 2 == 0:
                    break
            i = q + 1
            continue
        if c == 123 or c == 91:
            if depth == 1 and want:
                starts.append(i)
                want = False
            depth += 1
            if depth == 1:
                want = True
        elif c == 125 or c == 93:
            depth -= 1
            if depth <= 0:
                return starts, i
        elif c == 44 and depth == 1:  # a comma between two elements
            want = True
        elif depth == 1 and want and not _space(c):  # a number, true, false or null
            starts.append(i)
            want = False
        i += 1
    return starts, -1


cdef bint _read_with(object v, object rule, object fx, object er) except -1:
    """Is every element of the list v (read with rule; fx: its fixed_child), a str, read
    with er (rule.child(i).resolve(v[i]) is er: Rule's resolve or Word's, without the
    calls where every element's rule is fixed)?"""
    cdef Py_ssize_t i
    if fx is not None:
        r = getattr(type(fx), "resolve")
        if r is _base_resolve:
            return fx is er
        if r is _word_resolve:
            return fx.word is er
    for i in range(len(v)):
        if (fx if fx is not None else rule.child(i)).resolve(v[i]) is not er:
            return False
    return True


cdef class _Unread:
    """base/fieldwalk.first_unread, compiled: fields.walk over a parsed document, visit
    called in document order on each field memo does not show clean, until it answers."""
    cdef object memo
    cdef bint exact  # memo is a dict, not a subclass: looked up directly (said_nothing)
    cdef object visit
    cdef object found
    cdef _Plain plain
    cdef object num, dup, number, key, name, field, context_fn, nothing
    cdef object ctx_key
    cdef tuple ctx
    # the memo's runs (base/fieldwalk.Clean, the reference, says how they are read)
    cdef list run, raw
    cdef Py_ssize_t at, raw_at, misses, ahead, behind, miss_max
    cdef object runset

    cdef bint clean(self, str v, object rule, object k) except -1:
        """Does memo say the scan found nothing in what the guard reads of v (as it is,
        or with its key around it)? Only for a string read as it is."""
        if not self.plain.plain(v, rule):
            return False
        if k is None:
            return self.said_nothing(v)
        if k is not self.ctx_key:
            self.ctx = self.context_fn(k)
            self.ctx_key = k
        return self.said_nothing(self.ctx[0] + v + self.ctx[1])

    cdef inline bint said_nothing(self, str text) except -1:
        """memo.get(text) is NOTHING (a dict's own look-up: no method call a string), or
        text is next in the memo's run (fieldwalk.Clean.said_nothing, the reference)."""
        cdef PyObject *got
        cdef list run = self.run
        if run is not None and self.in_run(run, &self.at, text):
            return True
        if self.raw is not None and self.in_run(self.raw, &self.raw_at, text):
            return True
        if self.raw is not None and run is None:
            run = self.raw
        if self.exact:
            got = PyDict_GetItem(self.memo, text)  # (a str key: nothing to swallow)
            if got != NULL and got == <PyObject *>self.nothing:
                return True
            if (got != NULL and got != <PyObject *>None) or run is None:
                return False
        else:
            g = self.memo.get(text)
            if g is self.nothing:
                return True
            if g is not None or run is None:
                return False
        if self.runset is None:  # no entry: scanned again, or looked for in the runs as a set
            self.misses += 1
            if self.misses <= self.miss_max:
                return False
            self.runset = set(self.run or ())
            self.runset.update(self.raw or ())
        return text in self.runset

    cdef inline bint in_run(self, list run, Py_ssize_t *at, str text) except -1:
        """Is text one of run's next texts from at, or of those just before (at moves on
        past it)?"""
        cdef Py_ssize_t j, end
        end = min(at[0] + self.ahead, len(run))
        for j in range(at[0], end):
            r = run[j]
            if r is text or r == text:
                at[0] = j + 1
                return True
        end = max(at[0] - self.behind, 0)
        for j in range(at[0] - 1, end - 1, -1):
            r = run[j]
            if r is text or r == text:
                at[0] = j + 1
                return True
        return False

    cdef bint left_out(self, object v, object rule, object fx) except -1:
        """Is v (a list read with rule; fx: its fixed_child) one the raw run holds as a
        LeftOut, among its next entries or those just before, each of its elements read
        with the rule the masker's walk read them with (the run moves on past it)?
        (fieldwalk.Clean.left_out, the reference.)"""
        cdef list raw = self.raw
        cdef Py_ssize_t j, at = self.raw_at, n = len(v), end
        cdef object m, got = None
        end = min(at + self.ahead, len(raw))
        for j in range(at, end):
            m = raw[j]
            if type(m) is LeftOut and (<object>m).items is v and (<object>m).n == n:
                got = m
                break
        if got is None:
            end = max(at - self.behind, 0)
            for j in range(at - 1, end - 1, -1):
                m = raw[j]
                if type(m) is LeftOut and (<object>m).items is v and (<object>m).n == n:
                    got = m
                    break
        if got is None or not _read_with(v, rule, fx, got.rule):
            return False
        self.raw_at = j + 1
        return True

    cdef bint see(self, object f) except -1:
        """visit(f); True once it has answered (the walk stops)."""
        got = self.visit(f)
        if got is not None:
            self.found = got
            return True
        return False

    cdef bint node(self, object v, object rule, object parent, object seg, bint top, object k, int depth) except -1:
        """v, reached from its container (path parent) by seg (top: v is the document).
        True once visit has answered."""
        cdef object path, items, key, x, child_keys, known, fx, sx, kr
        cdef Py_ssize_t i, n
        cdef bint sx_string
        if depth > 20000:  # deeper than any parser here reads (C stack)
            raise RecursionError("document nested too deeply for the leak guard's walk")
        rule = resolved(rule, v)
        if isinstance(v, str):
            if type(v) is self.num:
                if not rule.skip:
                    return self.see(self.field(None if top else (parent, seg), v, self.number, None, False))
            elif rule.string and not self.clean(v, rule, k):
                return self.see(self.field(None if top else (parent, seg), v, rule, k, False))
            return False
        if isinstance(v, dict):
            if rule.skip:
                return False
            path = None if top else (parent, seg)
            items = v.pairs if type(v) is self.dup else list(v.items())
            child_keys, known = rule.keys, rule.known
            # a key the masker leaves as written, not one of the API's field names: NAME
            kr = self.key if child_keys else self.name
            for key, x in items:
                if key not in known and not self.clean(key, kr, None):
                    if self.see(self.field((path, key), key, kr, None, True)):
                        return True
            fx = fixed_child(rule)
            for key, x in items:
                if self.node(x, fx if fx is not None else rule.child(key), path, key, False,
                             key if child_keys and key not in known else None, depth + 1):
                    return True
        elif isinstance(v, list):
            if rule.skip:
                return False
            path = None if top else (parent, seg)
            n = len(v)
            fx = fixed_child(rule)
            if self.raw is not None and self.left_out(v, rule, fx):
                return False  # left out whole by the masker's walk, shown clean by the raw scan
            # every element's rule is fx as it is (its class keeps Rule's resolve): a plain
            # str element (not a Num) is what node() would take it for without the call
            # (a tool input's million-element array: one call an element less; not where
            # node() would refuse the element for its depth)
            sx = fx if fx is not None and depth < 20000 and getattr(type(fx), "resolve") is _base_resolve else None
            sx_string = sx is not None and bool(sx.string)  # (read once, not once an element)
            for i in range(n):
                if i >= PyList_GET_SIZE(v):  # (visit may have changed the list: as v[i] would)
                    raise IndexError("list index out of range")
                x = <object>PyList_GET_ITEM(v, i)
                if sx is not None and type(x) is str:
                    if not sx_string or self.clean(x, sx, None):
                        continue  # node(): not a string the rule reads, or clean
                    # node()'s visit, without asking clean again (a run is read once a text)
                    if self.see(self.field((path, i), x, sx, None, False)):
                        return True
                    continue
                if self.node(x, fx if fx is not None else rule.child(i), path, i, False, None, depth + 1):
                    return True
        return False


def first_unread(doc, root, memo, visit, kinds):
    """base/fieldwalk.py_first_unread, compiled (kinds: that module's KINDS tuple)."""
    cdef _Unread u = _Unread.__new__(_Unread)
    u.memo = memo if memo is not None else {}
    u.visit = visit
    u.found = None
    u.num, u.dup, u.number, u.key, u.name, u.field, plain, u.context_fn, u.nothing, memo_type, u.ahead, u.behind, u.miss_max = (
        kinds
    )
    u.exact = type(u.memo) is dict or type(u.memo) is memo_type
    u.run = getattr(u.memo, "run", None) or None
    u.raw = getattr(u.memo, "raw", None) or None
    u.at = u.raw_at = u.misses = 0
    u.runset = None
    u.plain = _Plain(plain)
    u.ctx_key = None
    u.ctx = None
    u.node(doc, root, None, None, True, None, 0)
    return u.found
