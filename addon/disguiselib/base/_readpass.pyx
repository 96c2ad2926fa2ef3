# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled per-read step of a stream (base/readpass.py says what it is and what
its reference is). Hand-written: typed C over the read's bytes; Python objects only for
the events it changes, new channels and the windows' held tails."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String, PyUnicode_DecodeUTF8
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memset

import weakref

from ..rules.restorer import strip_starts
from ..wire.text import json_escape
from .holdback import MAX_CHANNELS, Window
from .stream import StreamState

cdef object DONE = StreamState.DONE
cdef object FAILED = StreamState.FAILED

cdef int TEXT = Window.TEXT
cdef int JSON = Window.JSON
cdef int VALUE = Window.VALUE

# a step's outcome (Pass._step)
cdef enum:
    DECLINE = -1
    SAME = 0      # the event as it came
    NEW = 1       # self._new: the event with its text changed
    NOTHING = 2   # all of it held: no text to send

# What a short JSON escape (`\"`, `\\`, `\/`, `\b`, `\t`, `\n`, `\f`, `\r`) spells
cdef str SHORT_ESC_SPELLS = '"\\/\b\t\n\f\r'


cdef enum:
    ANTHROPIC = 1
    CHAT = 2
    RESPONSES = 3


# -- the disguises' byte trie (one per rule set) -------------------------------------------

cdef class Matcher:
    """The rule set's disguises (ASCII: mappings.validate) as a byte trie: leftmost-longest
    matches and the hold-back point, as Restorer._edits finds them with Aho–Corasick and
    the trie regex. A proper prefix is at most the longest disguise less one byte long, so
    both are linear in the text (at most that many steps per byte)."""

    cdef int root[256]
    cdef int *estart
    cdef int *ecount
    cdef unsigned char *ebyte
    cdef int *eto
    cdef int *term
    cdef char *kids
    cdef int reach[256]  # as Rules._hold_reach: how far back a held tail ending in a byte begins
    # Where a strip match (TEXT) may begin, by byte: 0 never, 1 where the next byte is in
    # its follow set (or the text ends there), 2 always. A text with none of those starts
    # holds no strip match and no prefix of one, so the restorer's result is that of the
    # disguises and placeholders alone; otherwise the window's own feed runs.
    cdef unsigned char start[2][256]
    cdef unsigned char follow[2][256][32]
    cdef bint strip_nonascii
    # No disguise holds a character a short JSON escape spells (`"`, `\`, `/`, BS, TAB,
    # LF, FF, CR; only `/` passes mappings.validate): then JSON text whose escapes are all
    # short ones is matched here in raw space, as Restorer._decoded_edits does in decoded
    # space (ReadPass._step).
    cdef readonly bint short_esc_ok
    cdef int nnodes
    cdef list originals  # UTF-8 of each disguise's original (TEXT)
    cdef list escaped  # UTF-8 of json_escape(original) (JSON)
    cdef list names  # the patterns' names + `_` (UTF-8): placeholders `[NAME_<digits>]`
    cdef Py_ssize_t ph_span  # the longest placeholder
    cdef object __weakref__

    def __cinit__(self, rules):
        self.estart = self.ecount = self.eto = self.term = NULL
        self.ebyte = NULL
        self.kids = NULL
        cdef int i
        for i in range(256):
            self.root[i] = -1
            self.reach[i] = 0
        memset(self.start, 0, sizeof(self.start))
        memset(self.follow, 0, sizeof(self.follow))
        disguises = list(rules.lit_reverse)
        children = [{}]
        term = [-1]
        for k, d in enumerate(disguises):
            node = 0
            for c in d.encode("ascii"):
                nxt = children[node].get(c)
                if nxt is None:
                    nxt = len(children)
                    children[node][c] = nxt
                    children.append({})
                    term.append(-1)
                node = nxt
            term[node] = k
            for i in range(1, len(d)):
                c = ord(d[i - 1])
                if self.reach[c] < i:
                    self.reach[c] = i
        self.nnodes = len(children)
        nedges = sum(len(ch) for ch in children)
        self.estart = <int *> malloc(self.nnodes * sizeof(int))
        self.ecount = <int *> malloc(self.nnodes * sizeof(int))
        self.term = <int *> malloc(self.nnodes * sizeof(int))
        self.kids = <char *> malloc(self.nnodes)
        self.ebyte = <unsigned char *> malloc(nedges + 1)
        self.eto = <int *> malloc((nedges + 1) * sizeof(int))
        if not (self.estart and self.ecount and self.term and self.kids and self.ebyte and self.eto):
            raise MemoryError()
        cdef int at = 0
        for node in range(self.nnodes):
            ch = children[node]
            self.estart[node] = at
            self.ecount[node] = len(ch)
            self.term[node] = term[node]
            self.kids[node] = 1 if ch else 0
            for c in sorted(ch):
                self.ebyte[at] = c
                self.eto[at] = ch[c]
                at += 1
        for c, nxt in children[0].items():
            self.root[c] = nxt
        self.originals = [rules.lit_reverse[d].encode("utf-8", "surrogatepass") for d in disguises]
        self.escaped = [json_escape(rules.lit_reverse[d]).encode("utf-8", "surrogatepass") for d in disguises]
        # placeholders (`[NAME_12]`): the names, each with its `_`
        self.names = [(n + "_").encode("utf-8") for n in rules.pattern_names] if rules._ph is not None else []
        self.ph_span = 2 + max((len(n) for n in self.names), default=0) + 9
        self.strip_nonascii = bool(rules._strips) and bool(rules._strip_nonascii)
        self.short_esc_ok = not any(c in d for d in disguises for c in SHORT_ESC_SPELLS)
        for st in rules.mappings.strips:
            first, _, fol = strip_starts(st.regex)
            for c1 in first:
                self._starts(0, c1, fol[c1])

    cdef _starts(self, int mi, str c1, fol):
        cdef int c = ord(c1)
        if fol is None or any(ord(x) >= 128 for x in fol):
            self.start[mi][c] = 2
            return
        if self.start[mi][c] == 2:
            return
        self.start[mi][c] = 1
        for x in fol:
            self.follow[mi][c][ord(x) >> 3] |= 1 << (ord(x) & 7)

    cdef Py_ssize_t placeholder(self, const unsigned char *b, Py_ssize_t s, Py_ssize_t n) except -2:
        """The end of the placeholder `[NAME_<1-9><0-9>{0,8}]` at b[s], or -1 (rules._ph)."""
        cdef Py_ssize_t q, d, L
        cdef bytes nb
        for nb in self.names:
            L = PyBytes_GET_SIZE(nb)
            if s + 1 + L + 2 > n or memcmp(b + s + 1, PyBytes_AS_STRING(nb), L) != 0:
                continue
            q = s + 1 + L
            if not (49 <= b[q] <= 57):
                continue
            d = q + 1
            while d < n and d - q < 9 and 48 <= b[d] <= 57:
                d += 1
            if d < n and b[d] == 93:
                return d + 1
        return -1

    cdef bint ph_tail(self, const unsigned char *b, Py_ssize_t i, Py_ssize_t n) except -1:
        """Is b[i:n] what may follow the `[` of a placeholder still being written: empty, a
        prefix of `NAME_`, or `NAME_` and 1-9 digits (the first not 0)? (Rules._hold_ph)"""
        cdef Py_ssize_t r = n - i, L, d
        cdef bytes nb
        if r == 0:
            return True
        for nb in self.names:
            L = PyBytes_GET_SIZE(nb)
            if r <= L:
                if memcmp(b + i, PyBytes_AS_STRING(nb), r) == 0:
                    return True
            elif r - L <= 9 and memcmp(b + i, PyBytes_AS_STRING(nb), L) == 0 and 49 <= b[i + L] <= 57:
                d = i + L + 1
                while d < n and 48 <= b[d] <= 57:
                    d += 1
                if d == n:
                    return True
        return False

    cdef Py_ssize_t hold_ph(self, const unsigned char *b, Py_ssize_t start, Py_ssize_t n) except -2:
        """hold(), where the flow may hold placeholders back too: the leftmost of the two."""
        cdef Py_ssize_t h = self.hold(b, start, n)
        cdef Py_ssize_t p = n - self.ph_span
        if p < start:
            p = start
        while p < h:
            if b[p] == 91 and self.ph_tail(b, p + 1, n):
                return p
            p += 1
        return h

    cdef inline bint restorer_needed(self, int mode, const unsigned char *b, Py_ssize_t n) noexcept nogil:
        """Could a strip match (or a prefix of one) begin in b[:n]?"""
        if mode != TEXT:
            return False
        cdef int mi = 0
        cdef Py_ssize_t p
        cdef unsigned char v, c, d
        for p in range(n):
            c = b[p]
            v = self.start[mi][c]
            if v:
                if v == 2 or p + 1 == n:
                    return True
                d = b[p + 1]
                if self.follow[mi][c][d >> 3] & (1 << (d & 7)):
                    return True
            elif c >= 128 and mi == 0 and self.strip_nonascii:
                return True
        return False

    def __dealloc__(self):
        free(self.estart)
        free(self.ecount)
        free(self.term)
        free(self.kids)
        free(self.ebyte)
        free(self.eto)

    cdef inline int child(self, int node, unsigned char c) noexcept nogil:
        cdef int lo = self.estart[node]
        cdef int hi = lo + self.ecount[node]
        cdef int mid
        while hi - lo > 8:
            mid = (lo + hi) >> 1
            if self.ebyte[mid] <= c:
                lo = mid
            else:
                hi = mid
        while lo < hi:
            if self.ebyte[lo] == c:
                return self.eto[lo]
            lo += 1
        return -1

    cdef inline Py_ssize_t longest(self, const unsigned char *b, Py_ssize_t i, Py_ssize_t n, int *k) noexcept nogil:
        """The end of the longest disguise starting at b[i] (k: its index), or -1."""
        cdef int node = self.root[b[i]]
        cdef Py_ssize_t j = i + 1
        cdef Py_ssize_t best = -1
        while node >= 0:
            if self.term[node] >= 0:
                best = j
                k[0] = self.term[node]
            if j >= n or not self.kids[node]:
                break
            node = self.child(node, b[j])
            j += 1
        return best

    cdef inline Py_ssize_t hold(self, const unsigned char *b, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
        """The leftmost p >= start from which b[p:n] is a non-empty proper prefix of a
        disguise (a trie node with children), or n."""
        if n == 0:
            return n
        cdef Py_ssize_t lo = n - self.reach[b[n - 1]]
        if lo < start:
            lo = start
        cdef Py_ssize_t p, j
        cdef int node
        for p in range(lo, n):
            node = self.root[b[p]]
            j = p + 1
            while node >= 0 and j < n:
                node = self.child(node, b[j])
                j += 1
            if node >= 0 and self.kids[node]:
                return p
        return n


cdef object _MATCHERS = weakref.WeakKeyDictionary()


cdef Matcher matcher_for(rules):
    m = _MATCHERS.get(rules)
    if m is None:
        m = _MATCHERS[rules] = Matcher(rules)
    return <Matcher> m


def prepare(rules):
    """Build rules' matcher now (config.compiled: off the loop on a reload), not at the
    first stream a pass reads (~10 ms on the event loop for 1,000 literals)."""
    matcher_for(rules)


def prepared(rules):
    """Is rules' matcher built (tests)?"""
    return rules in _MATCHERS


# -- byte parsing helpers: each returns the position after what it read, or -1 --------------

cdef inline Py_ssize_t ws(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    if i < 0:
        return -1
    while i < n and (p[i] == 32 or p[i] == 9 or p[i] == 12 or p[i] == 11):
        i += 1
    return i


cdef inline Py_ssize_t lit(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, const char *s, Py_ssize_t k) noexcept nogil:
    if i < 0 or i + k > n or memcmp(p + i, s, k) != 0:
        return -1
    return i + k


cdef inline Py_ssize_t digits(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, long long *v) noexcept nogil:
    """[0-9]+ (at most 18 of them: more is declined)."""
    if i < 0:
        return -1
    cdef Py_ssize_t s = i
    cdef long long x = 0
    while i < n and 48 <= p[i] <= 57:
        x = x * 10 + (p[i] - 48)
        i += 1
        if i - s > 18:
            return -1
    if i == s:
        return -1
    v[0] = x
    return i


cdef inline Py_ssize_t jstr(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, bint *bs) noexcept nogil:
    """The body of a JSON string on one line (`[^"\\\\\\r\\n]*(?:\\\\[^\\r\\n][^"\\\\\\r\\n]*)*`)
    from i: the position of its closing quote, or -1."""
    if i < 0:
        return -1
    cdef unsigned char c
    while i < n:
        c = p[i]
        if c == 34:
            return i
        if c == 92:
            bs[0] = True
            if i + 1 >= n or p[i + 1] == 13 or p[i + 1] == 10:
                return -1
            i += 2
            continue
        if c == 13 or c == 10:
            return -1
        i += 1
    return -1


cdef inline Py_ssize_t name(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, bint dash) noexcept nogil:
    """[A-Za-z0-9_]+ (dash: and `-`)."""
    if i < 0:
        return -1
    cdef Py_ssize_t s = i
    cdef unsigned char c
    while i < n:
        c = p[i]
        if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95 or (dash and c == 45):
            i += 1
        else:
            break
    return i if i > s else -1


cdef inline Py_ssize_t member(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Chat's plain envelope member: `"[a-z_]+":(?:"[^"\\\\\\r\\n]*"|-?[0-9]+|null|true|false)`."""
    if i < 0 or i >= n or p[i] != 34:
        return -1
    i += 1
    cdef Py_ssize_t s = i
    while i < n and ((97 <= p[i] <= 122) or p[i] == 95):
        i += 1
    if i == s:
        return -1
    i = lit(p, i, n, b'":', 2)
    if i < 0 or i >= n:
        return -1
    cdef unsigned char c = p[i]
    if c == 34:
        i += 1
        while i < n and p[i] != 34:
            if p[i] == 92 or p[i] == 13 or p[i] == 10:
                return -1
            i += 1
        return i + 1 if i < n else -1
    if c == 45 or (48 <= c <= 57):
        if c == 45:
            i += 1
        s = i
        while i < n and 48 <= p[i] <= 57:
            i += 1
        return i if i > s else -1
    if lit(p, i, n, b"null", 4) > 0 or lit(p, i, n, b"true", 4) > 0:
        return i + 4
    if lit(p, i, n, b"false", 5) > 0:
        return i + 5
    return -1


cdef inline bint has_u(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """Does p hold `\\u`? (then on_raw may decline: declined here)"""
    cdef const unsigned char *q = p
    cdef const unsigned char *end = p + n
    while q < end:
        q = <const unsigned char *> memchr(q, 92, end - q)
        if q == NULL:
            return False
        if q + 1 < end and q[1] == 117:
            return True
        q += 2
    return False


cdef Py_ssize_t short_escapes(const unsigned char *b, Py_ssize_t n) noexcept nogil:
    """JSON text b[:n] with a backslash: the position of its last escape's letter where
    every backslash begins a whole short escape (`\\"`, `\\\\`, `\\/`, `\\b`, `\\f`, `\\n`,
    `\\r`, `\\t`), else -1 (a `\\u`, anything else, a backslash that ends b: cut short).
    The text begins outside an escape (a window's held tail does: holdback.Window)."""
    cdef const unsigned char *q = b
    cdef const unsigned char *end = b + n
    cdef Py_ssize_t letter = -1
    cdef unsigned char c
    while q < end:
        q = <const unsigned char *> memchr(q, 92, end - q)
        if q == NULL:
            break
        if q + 1 >= end:
            return -1
        c = q[1]
        if not (c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116):
            return -1
        letter = q + 1 - b
        q += 2
    return letter


cdef bint utf8_ok(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """is_utf8 (Python's strict UTF-8 decoder: no overlong form, no surrogate, nothing
    past U+10FFFF), checked in place: nothing decoded, nothing allocated."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, c1
    cdef uint64_t w
    while i < n:
        while i + 8 <= n:  # ASCII, eight bytes at a time
            memcpy(&w, p + i, 8)
            if w & 0x8080808080808080ULL:
                break
            i += 8
        if i >= n:
            break
        c = p[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            if i + 1 >= n or (p[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif 0xE0 <= c <= 0xEF:
            if i + 2 >= n:
                return False
            c1 = p[i + 1]
            if (c1 & 0xC0) != 0x80 or (p[i + 2] & 0xC0) != 0x80:
                return False
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0):  # overlong; a surrogate
                return False
            i += 3
        elif 0xF0 <= c <= 0xF4:
            if i + 3 >= n:
                return False
            c1 = p[i + 1]
            if (c1 & 0xC0) != 0x80 or (p[i + 2] & 0xC0) != 0x80 or (p[i + 3] & 0xC0) != 0x80:
                return False
            if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):  # overlong; past U+10FFFF
                return False
            i += 4
        else:
            return False
    return True


cdef const char *HEX = b"0123456789abcdef"


cdef inline Py_ssize_t put_u(unsigned char *d, Py_ssize_t k, unsigned int u) noexcept nogil:
    """`\\u` and u's four hex digits at d[k:]; returns the end."""
    d[k] = 92
    d[k + 1] = 117
    d[k + 2] = HEX[u >> 12]
    d[k + 3] = HEX[(u >> 8) & 15]
    d[k + 4] = HEX[(u >> 4) & 15]
    d[k + 5] = HEX[u & 15]
    return k + 6


cdef Py_ssize_t escape_like(const unsigned char *o, Py_ssize_t on, bint ascii, unsigned char *d) noexcept nogil:
    """encode_like's body, in place: the JSON string body for the text o[:on] (UTF-8, a
    lone surrogate in its 3-byte form as surrogatepass writes it), as json.dumps writes
    it: ascii (the token it replaces was ASCII), json.dumps(value)[1:-1], every
    character past `~` as `\\u` (a pair for one past U+FFFF); else json_escape(value):
    UTF-8 kept, a lone surrogate as `\\u`. d holds at least 12 * on bytes (6 per
    UTF-16 unit, 2 units for 4 bytes); returns how many it wrote."""
    cdef Py_ssize_t i = 0, k = 0, m
    cdef unsigned char c, e
    cdef unsigned int cp
    while i < on:
        c = o[i]
        if c >= 32 and c != 34 and c != 92 and (c < 127 or (c == 127 and not ascii)):
            d[k] = c
            k += 1
            i += 1
            continue
        if c < 128:
            i += 1
            if c == 34 or c == 92:
                e = c
            elif c == 10:
                e = 110
            elif c == 13:
                e = 114
            elif c == 9:
                e = 116
            elif c == 8:
                e = 98
            elif c == 12:
                e = 102
            else:  # a control character, or DEL where ASCII is kept
                k = put_u(d, k, c)
                continue
            d[k] = 92
            d[k + 1] = e
            k += 2
            continue
        # a multi-byte character (the text is UTF-8: its length from its first byte)
        m = 2 if c < 0xE0 else 3 if c < 0xF0 else 4
        if not ascii and not (m == 3 and c == 0xED and o[i + 1] >= 0xA0):
            memcpy(d + k, o + i, m)
            k += m
            i += m
            continue
        if m == 2:
            cp = ((c & 0x1F) << 6) | (o[i + 1] & 0x3F)
        elif m == 3:
            cp = ((c & 0x0F) << 12) | ((o[i + 1] & 0x3F) << 6) | (o[i + 2] & 0x3F)
        else:
            cp = ((c & 0x07) << 18) | ((o[i + 1] & 0x3F) << 12) | ((o[i + 2] & 0x3F) << 6) | (o[i + 3] & 0x3F)
        i += m
        if cp > 0xFFFF:
            cp -= 0x10000
            k = put_u(d, k, 0xD800 | (cp >> 10))
            cp = 0xDC00 | (cp & 0x3FF)
        k = put_u(d, k, cp)
    return k


# -- the pass ----------------------------------------------------------------------------------

cdef int room(unsigned char **buf, Py_ssize_t *cap, Py_ssize_t n) except -1:
    """*buf holds at least n bytes (grown, never shrunk)."""
    cdef void *p
    if n > cap[0]:
        p = realloc(buf[0], n + 64)
        if p == NULL:
            raise MemoryError()
        buf[0] = <unsigned char *> p
        cap[0] = n + 64
    return 0


cdef class ReadPass:
    """One stream's compiled per-read step (readpass.py): run(stream, block, out)."""

    cdef Matcher m
    cdef int api
    cdef object restorer
    cdef dict deltas  # Responses: type -> (field, mode)
    cdef unsigned char *buf  # the window's text: held + the delta, decoded (UTF-8)
    cdef Py_ssize_t cap
    cdef unsigned char *res  # the restored text
    cdef Py_ssize_t rcap
    cdef unsigned char *esc  # a restored text escaped as JSON (_splice)
    cdef Py_ssize_t ecap
    # what a run changes on its stream, written once at its end (run): events changed
    # and held, and (Responses) the highest sequence number read
    cdef Py_ssize_t n_changed, n_held
    # deltas this pass handed to the window's own feed, and JSON-text deltas with short
    # escapes it matched itself (tests: which way a delta went; never reset)
    cdef readonly Py_ssize_t n_fed, n_short_esc
    cdef long long seq_max
    cdef object w_key  # the channel whose where[] entry this run wrote (Responses)
    # the held text the window was last given, and its UTF-8
    cdef object h_str
    cdef bytes h_bytes
    cdef object framer  # the stream's framer (feed: are bytes waiting in it?)
    # The stream's channel windows and (Chat) its set of channels whose text came as
    # parts: the very objects, read once here, not an attribute look-up a read. Neither
    # is ever replaced while a pass can run: `SSEStream.fail` replaces the windows, and
    # the stream is FAILED from then on (feed() declines, SSEStream.feed returns first).
    cdef dict s_windows
    cdef object s_parts
    cdef bint c_remembered  # Chat: the stream remembered its first chunk (never forgotten)
    cdef object _new  # the event _step made (NEW)
    # Chat: the channel key of the delta before (choice, tool call: -1 for content)
    cdef long long c_ci, c_ti
    cdef object c_key
    # Chat: the envelope of the last delta read (`data: {` up to `"choices":[{"index":`:
    # plain members, no backslash, UTF-8), the same in every chunk of a stream: an event
    # that begins with these very bytes is read from there on
    cdef bytes c_env
    # Responses: the channel of the delta before (its type, indexes and item -> key,
    # fields, mode)
    cdef int r_t
    cdef long long r_oi, r_ci
    cdef bytes r_item
    cdef object r_key
    cdef object r_fields
    cdef int r_mode
    cdef bint r_holds  # (Responses) the delta just read left its window holding a tail

    def __cinit__(self, stream, int api, deltas=None):
        self.buf = self.res = self.esc = NULL
        self.cap = self.rcap = self.ecap = 0

    def __init__(self, stream, int api, deltas=None):
        self.restorer = stream.restorer
        self.m = matcher_for(self.restorer.rules)
        self.api = api
        self.deltas = dict(deltas or {})
        self.c_key = None
        self.c_env = None
        self.r_item = None
        self.r_key = None
        self.r_fields = None
        self.r_mode = 0
        self.r_holds = False
        self.h_str = None
        self.h_bytes = None
        self.framer = stream.framer
        self.s_windows = stream.windows
        self.s_parts = getattr(stream, "parts", None)
        self.c_remembered = False

    def __dealloc__(self):
        free(self.buf)
        free(self.res)
        free(self.esc)


    def run(self, stream, bytes block, list out):
        """Append to out what the events of block (whole events, from an event's start)
        give, from its start while each is one this pass reads; return where the first
        it declines begins (len(block): all read). Nothing changed: block itself."""
        return self._run(stream, block, out)

    def feed(self, stream, bytes data, list out):
        """SSEStream.feed's common read taken whole: a read of whole events (it ends with a
        blank line, LF line ends, nothing waiting in the framer) of a stream still open,
        run as run() runs it. -1 where it is not that read, 0 where its first event is
        declined: both with nothing touched."""
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        cdef const char *p = PyBytes_AS_STRING(data)
        if n < 2 or p[n - 1] != 10 or p[n - 2] != 10:
            return -1
        st = stream.state
        if st is DONE or st is FAILED or not stream.fast or self.framer._size:
            return -1
        return self._run(stream, data, out)

    cdef Py_ssize_t _run(self, stream, bytes block, list out) except -2:
        cdef const unsigned char *p = <const unsigned char *> PyBytes_AS_STRING(block)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(block)
        if memchr(p, 13, n) != NULL:
            return 0
        cdef Py_ssize_t pos = 0, e, sent = 0, count = 0
        cdef const unsigned char *q
        cdef int r
        windows = self.s_windows
        self.n_changed = self.n_held = 0
        self.seq_max = -1
        self.w_key = None
        # (Responses) the delta that waits for the next event (ResponsesStream.held_event):
        # it goes out before the next event this pass reads; a delta that leaves its window
        # holding a tail waits in its turn
        held = None
        # what a run reads of its stream once: no Python code that runs inside it
        # (a window's own feed) changes them
        if self.api == RESPONSES:
            if stream.offset != 0:  # renumbering: Python's way
                return 0
            held = stream.held_event
        elif self.api == CHAT:
            if not self.c_remembered:
                if not stream.remembered:
                    return 0
                self.c_remembered = True
        try:
            while pos < n:
                q = <const unsigned char *> memchr(p + pos, 10, n - pos)
                # the event's end: the first blank line (an LF after an LF)
                while q != NULL and (q + 1 >= p + n or q[1] != 10):
                    q = <const unsigned char *> memchr(q + 1, 10, p + n - q - 1)
                if q == NULL:
                    break
                e = q - p + 2
                if self.api == ANTHROPIC:
                    r = self._anthropic(stream, windows, block, p, pos, e)
                elif self.api == CHAT:
                    r = self._chat(stream, windows, block, p, pos, e)
                else:
                    r = self._responses(stream, windows, block, p, pos, e)
                if r == DECLINE:
                    break
                count += 1
                if held is not None:  # (then sent == pos: it waited at the event before)
                    out.append(held[1])
                    held = None
                if self.r_holds and self.api == RESPONSES:
                    if pos > sent:
                        out.append(block[sent:pos])
                    if r == NEW:
                        held = (self.r_key, self._new)
                        self._new = None
                    else:
                        held = (self.r_key, block[pos:e])
                    sent = pos = e
                    continue
                if r != SAME:
                    if pos > sent:
                        out.append(block[sent:pos])
                    if r == NEW:
                        out.append(self._new)
                        self._new = None
                    sent = e
                pos = e
        finally:
            # the stream's state as on_raw leaves it, written once
            if count:
                stream.events_in += count
            if self.n_changed:
                stream.events_changed += self.n_changed
            if self.n_held:
                stream.events_held += self.n_held
            if self.seq_max >= 0 and self.seq_max > stream.last_seq:
                stream.last_seq = self.seq_max
            if self.api == RESPONSES:
                stream.held_event = held
        if sent == 0 and pos == n:
            out.append(block)
        elif pos > sent:
            out.append(block[sent:pos])
        return pos

    # -- one delta's text through its window (SSEStream.window_raw) ----------------------------

    cdef int _step(self, stream, w, bytes raw_block, const unsigned char *p, Py_ssize_t ev, Py_ssize_t ee,
                   Py_ssize_t start, Py_ssize_t end, bint bs, int mode) except -2:
        """The delta p[start:end] (a JSON string's body inside the event p[ev:ee]) through
        window w, as window_raw does it: SAME, NEW (self._new), NOTHING, or DECLINE
        (nothing touched). Disguises alone are matched here; where placeholders, strip
        rules or JSON escapes other than whole short ones may take part, the window's own
        feed (Restorer.run) does it."""
        cdef Matcher m = self.m
        cdef object held = w.held
        cdef bint held_before = len(held) > 0
        cdef bint py = False  # the window's own feed restores this delta
        cdef const char *hp = NULL
        cdef Py_ssize_t hn = 0, i, k
        cdef bytes hb
        if held_before:
            if held is self.h_str:  # the tail this pass left: its UTF-8 kept
                hb = self.h_bytes
            else:
                try:
                    hb = PyUnicode_AsUTF8String(held)
                except UnicodeEncodeError:  # a lone surrogate held
                    hb = None
                    py = True
            if hb is not None:
                hp = PyBytes_AS_STRING(hb)
                hn = PyBytes_GET_SIZE(hb)
        room(&self.buf, &self.cap, hn + (end - start))
        cdef unsigned char *b = self.buf
        if hn:
            memcpy(b, hp, hn)
        cdef unsigned char c
        # the delta, decoded (as decode_field: short escapes here; \u: declined, on_raw's
        # way; a control character beside an escape is refused by json's scanstring)
        i = start
        k = hn
        if not bs:
            memcpy(b + k, p + start, end - start)
            k += end - start
        else:
            while i < end:
                c = p[i]
                if c < 32:
                    return DECLINE
                if c != 92:
                    b[k] = c
                    k += 1
                    i += 1
                    continue
                c = p[i + 1]
                if c == 34 or c == 92 or c == 47:
                    b[k] = c
                elif c == 110:
                    b[k] = 10
                elif c == 116:
                    b[k] = 9
                elif c == 114:
                    b[k] = 13
                elif c == 98:
                    b[k] = 8
                elif c == 102:
                    b[k] = 12
                else:
                    return DECLINE
                k += 1
                i += 2
        cdef Py_ssize_t bn = k
        # what only the restorer does: strip rules (a strip rule's first character), JSON
        # text with escapes of its own other than whole short ones (matched in decoded space)
        if mode != TEXT and mode != JSON:
            return DECLINE
        if py or m.restorer_needed(mode, b, bn):
            return self._feed(stream, w, held_before, p, ev, ee, start, end, b + hn, bn - hn)
        # JSON text whose escapes are all whole short ones, where no disguise holds what one
        # spells: Restorer._decoded_edits reads each as two opaque characters (`\/` as a
        # `/` no disguise holds), so a match here is one that does not start at an escape's
        # letter (`\nab` holds no `nab`; none can hold a backslash), and the hold point is
        # never that letter (the held tail would split the escape): in raw space, where the
        # text is the same but for those two rules
        cdef Py_ssize_t letter = -1  # the last escape's letter (the only one a hold point can be)
        if mode == JSON and memchr(b, 92, bn) != NULL:
            if m.short_esc_ok:
                letter = short_escapes(b, bn)
            if letter < 0:
                return self._feed(stream, w, held_before, p, ev, ee, start, end, b + hn, bn - hn)
            self.n_short_esc += 1
        # Restorer._edits' loop for disguises: leftmost-longest, before the hold point
        # placeholders: held back where the flow was issued some (or may be: Restorer._hold),
        # restored where it was issued that one
        cdef bint brackets = m.names and memchr(b, 91, bn) != NULL
        cdef bint ph_hold = brackets and self.restorer._hold is self.restorer.rules._hold_ph
        placeholders = self.restorer.placeholders if brackets else None
        cdef Py_ssize_t h = m.hold_ph(b, 0, bn) if ph_hold else m.hold(b, 0, bn)
        if h == letter:  # (a held tail holds no backslash: no other escape's letter can be it)
            h = m.hold_ph(b, h + 1, bn) if ph_hold else m.hold(b, h + 1, bn)
        cdef Py_ssize_t s = 0, at = 0, r = 0, e2
        cdef int idx = 0, nedits = 0
        cdef list reps = m.escaped if mode == JSON else m.originals
        cdef bytes rep
        room(&self.res, &self.rcap, bn)
        while s < h:
            if letter >= 0 and b[s] == 92:  # an escape (s is never inside one): no match starts in it
                s += 2
                continue
            e2 = m.longest(b, s, bn, &idx)
            rep = None
            if e2 < 0:
                if not (placeholders and b[s] == 91):
                    s += 1
                    continue
                e2 = m.placeholder(b, s, bn)
                if e2 < 0:
                    s += 1
                    continue
                orig = placeholders.get(PyUnicode_DecodeUTF8(<const char *> b + s, e2 - s, NULL))
                if orig is None:  # a placeholder this flow never issued: left as it is
                    s += 1
                    continue
                rep = (<str> (json_escape(orig) if mode == JSON else orig)).encode("utf-8", "surrogatepass")
            if rep is None:
                rep = <bytes> reps[idx]
            room(&self.res, &self.rcap, r + (s - at) + PyBytes_GET_SIZE(rep) + (bn - e2))
            memcpy(self.res + r, b + at, s - at)
            r += s - at
            memcpy(self.res + r, PyBytes_AS_STRING(rep), PyBytes_GET_SIZE(rep))
            r += PyBytes_GET_SIZE(rep)
            nedits += 1
            at = s = e2
            if e2 > h:  # (past the last escape: a hold point from here is never its letter)
                h = m.hold_ph(b, e2, bn) if ph_hold else m.hold(b, e2, bn)
        if at < h:
            memcpy(self.res + r, b + at, h - at)
            r += h - at
        if not held_before and nedits == 0 and h == bn:
            return SAME
        if nedits:
            self.restorer.restored += nedits
        if h < bn:
            self.h_bytes = PyBytes_FromStringAndSize(<const char *> b + h, bn - h)
            self.h_str = w.held = PyUnicode_DecodeUTF8(<const char *> b + h, bn - h, NULL)
        elif held_before:
            w.held = ""
        if h < bn:
            self.n_held += 1
            self.r_holds = True
        if r == 0:
            return NOTHING
        self.n_changed += 1
        return self._splice(p, ev, ee, start, end, <const char *> self.res, r)

    cdef int _feed(self, stream, w, bint held_before, const unsigned char *p, Py_ssize_t ev, Py_ssize_t ee,
                   Py_ssize_t start, Py_ssize_t end, const unsigned char *t, Py_ssize_t tn) except -2:
        """window_raw with the delta t[:tn] (decoded, UTF-8) through the window's own feed."""
        self.n_fed += 1
        text = PyUnicode_DecodeUTF8(<const char *> t, tn, NULL)
        out = w.feed(text)
        if not held_before and out == text:
            return SAME
        if w.held:
            self.n_held += 1
            self.r_holds = True
        if not out:
            return NOTHING
        self.n_changed += 1
        cdef bytes ob = (<str> out).encode("utf-8", "surrogatepass")
        return self._splice(p, ev, ee, start, end, PyBytes_AS_STRING(ob), PyBytes_GET_SIZE(ob))

    cdef int _splice(self, const unsigned char *p, Py_ssize_t ev, Py_ssize_t ee, Py_ssize_t start, Py_ssize_t end,
                     const char *o, Py_ssize_t on) except -2:
        """self._new: the event p[ev:ee] with its string body p[start:end] replaced by the
        restored text o[:on] (UTF-8), written as reencode_field writes it: as it is where
        it reads the same in any JSON string (printable ASCII, no `"` or `\\`), else in
        the style of the text it replaces (encode_like)."""
        cdef Py_ssize_t i
        cdef unsigned char c
        cdef bint plain = True
        for i in range(on):
            c = <unsigned char> o[i]
            if c < 32 or c > 126 or c == 34 or c == 92:
                plain = False
                break
        cdef bint ascii = True
        if not plain:
            for i in range(start, end):
                if p[i] >= 128:
                    ascii = False
                    break
            room(&self.esc, &self.ecap, 6 * on)
            on = escape_like(<const unsigned char *> o, on, ascii, self.esc)
            o = <const char *> self.esc
        cdef bytes new = PyBytes_FromStringAndSize(NULL, (start - ev) + on + (ee - end))
        cdef char *np = PyBytes_AS_STRING(new)
        memcpy(np, p + ev, start - ev)
        memcpy(np + (start - ev), o, on)
        memcpy(np + (start - ev) + on, p + end, ee - end)
        self._new = new
        return NEW

    cdef int _keyed(self, stream, dict windows, key, int mode, bytes block, const unsigned char *p,
                    Py_ssize_t ev, Py_ssize_t ee, Py_ssize_t start, Py_ssize_t end, bint bs) except -2:
        """ChannelStream.window_raw_for."""
        w = windows.get(key)
        if w is not None:
            return self._step(stream, w, block, p, ev, ee, start, end, bs, mode)
        if len(windows) >= MAX_CHANNELS:
            return DECLINE
        w = Window(self.restorer, mode)
        cdef int r = self._step(stream, w, block, p, ev, ee, start, end, bs, mode)
        if r != DECLINE:
            windows[key] = w
        return r

    # -- the APIs' shapes (their on_raw regexes, as byte parsers) ------------------------------

    cdef int _anthropic(self, stream, dict windows, bytes block, const unsigned char *p,
                        Py_ssize_t ev, Py_ssize_t ee) except -2:
        # event: [^\r\n]*\n data: {"type":"content_block_delta","index":N,"delta":{"type":"T","F":"S"}}\n\n
        cdef Py_ssize_t i = lit(p, ev, ee, b"event: ", 7)
        if i < 0:
            return DECLINE
        cdef const unsigned char *q = <const unsigned char *> memchr(p + i, 10, ee - i)
        i = q - p + 1
        i = lit(p, i, ee, b"data: {", 7)
        if i < 0:
            return DECLINE
        i = lit(p, ws(p, i, ee), ee, b'"type"', 6)
        i = lit(p, ws(p, i, ee), ee, b":", 1)
        i = lit(p, ws(p, i, ee), ee, b'"content_block_delta"', 21)
        i = lit(p, ws(p, i, ee), ee, b",", 1)
        i = lit(p, ws(p, i, ee), ee, b'"index"', 7)
        i = lit(p, ws(p, i, ee), ee, b":", 1)
        cdef long long idx = 0
        i = digits(p, ws(p, i, ee), ee, &idx)
        i = lit(p, ws(p, i, ee), ee, b",", 1)
        i = lit(p, ws(p, i, ee), ee, b'"delta"', 7)
        i = lit(p, ws(p, i, ee), ee, b":", 1)
        i = lit(p, ws(p, i, ee), ee, b"{", 1)
        i = lit(p, ws(p, i, ee), ee, b'"type"', 6)
        i = lit(p, ws(p, i, ee), ee, b":", 1)
        i = lit(p, ws(p, i, ee), ee, b'"', 1)
        cdef Py_ssize_t ts = i
        i = name(p, i, ee, False)
        if i < 0:
            return DECLINE
        cdef Py_ssize_t te = i
        i = lit(p, i, ee, b'"', 1)
        i = lit(p, ws(p, i, ee), ee, b",", 1)
        i = ws(p, i, ee)
        if lit(p, i, ee, b'"text"', 6) > 0:
            i += 6
        elif lit(p, i, ee, b'"partial_json"', 14) > 0:
            i += 14
        elif lit(p, i, ee, b'"thinking"', 10) > 0:
            i += 10
        elif lit(p, i, ee, b'"signature"', 11) > 0:
            i += 11
        else:
            return DECLINE
        i = lit(p, ws(p, i, ee), ee, b":", 1)
        i = lit(p, ws(p, i, ee), ee, b'"', 1)
        cdef Py_ssize_t start = i
        cdef bint bs = False
        i = jstr(p, i, ee, &bs)
        if i < 0:
            return DECLINE
        cdef Py_ssize_t end = i
        i = lit(p, ws(p, i + 1, ee), ee, b"}", 1)
        if i < 0:
            return DECLINE
        i = lit(p, ws(p, i, ee), ee, b"}", 1)
        i = ws(p, i, ee)
        if i < 0 or i + 2 != ee:  # then `\n\n`, the event's end
            return DECLINE
        if not utf8_ok(p + ev, ee - ev):
            return DECLINE
        cdef Py_ssize_t tl = te - ts
        if (tl == 14 and memcmp(p + ts, b"thinking_delta", 14) == 0) or (
                tl == 15 and memcmp(p + ts, b"signature_delta", 15) == 0):
            return SAME
        cdef int kind = JSON if (tl == 16 and memcmp(p + ts, b"input_json_delta", 16) == 0) else TEXT
        key = idx
        w = windows.get(key, False)
        if w is None:
            return SAME
        cdef int r
        if w is False or (w.mode != kind and not w.held):
            w = Window(self.restorer, kind)
            r = self._step(stream, w, block, p, ev, ee, start, end, bs, kind)
            if r != DECLINE:
                windows[key] = w
            return r
        return self._step(stream, w, block, p, ev, ee, start, end, bs, kind)

    cdef int _chat(self, stream, dict windows, bytes block, const unsigned char *p,
                   Py_ssize_t ev, Py_ssize_t ee) except -2:
        cdef Py_ssize_t i
        cdef Py_ssize_t j
        cdef Py_ssize_t env = 0  # the envelope's length where it is the one read before
        if self.c_env is not None:
            env = PyBytes_GET_SIZE(self.c_env)
            if ee - ev <= env or memcmp(p + ev, PyBytes_AS_STRING(self.c_env), env) != 0:
                env = 0
        if env:
            i = ev + env
        else:
            i = lit(p, ev, ee, b"data: {", 7)
            if i < 0:
                return DECLINE
            while lit(p, i, ee, b'"choices":[{"index":', 20) < 0:
                i = member(p, i, ee)
                if i < 0:
                    return DECLINE
                i = lit(p, i, ee, b",", 1)
                if i < 0:
                    return DECLINE
            i += 20
        cdef Py_ssize_t env_end = i
        cdef long long ci = 0, ti = 0
        i = digits(p, i, ee, &ci)
        i = lit(p, i, ee, b',"delta":{', 10)
        if i < 0:
            return DECLINE
        cdef bint tool
        cdef Py_ssize_t start, end
        cdef bint bs = False
        if lit(p, i, ee, b'"content":"', 11) > 0:
            tool = False
            start = i + 11
            end = jstr(p, start, ee, &bs)
            if end < 0:
                return DECLINE
            i = end + 1
        else:
            i = lit(p, i, ee, b'"tool_calls":[{"index":', 23)
            i = digits(p, i, ee, &ti)
            i = lit(p, i, ee, b',"function":{"arguments":"', 26)
            if i < 0:
                return DECLINE
            tool = True
            start = i
            end = jstr(p, start, ee, &bs)
            if end < 0:
                return DECLINE
            i = lit(p, end + 1, ee, b"}}]", 3)
        i = lit(p, i, ee, b'},"logprobs":null,"finish_reason":null}]', 40)
        if i < 0:
            return DECLINE
        while i >= 0 and lit(p, i, ee, b",", 1) > 0:
            i = member(p, i + 1, ee)
        if i < 0 or lit(p, i, ee, b"}\n\n", 3) != ee:
            return DECLINE
        # (the envelope read before holds no backslash, and ends with an ASCII byte)
        if has_u(p + ev + env, ee - ev - env):
            return DECLINE
        if not utf8_ok(p + ev + env, ee - ev - env):
            return DECLINE
        if not env:
            self.c_env = PyBytes_FromStringAndSize(<const char *> p + ev, env_end - ev)
        cdef int r
        if not tool:
            ti = -1
        if self.c_key is None or ci != self.c_ci or ti != self.c_ti:
            self.c_key = (ci, "content") if not tool else (ci, "tool", ti)
            self.c_ci, self.c_ti = ci, ti
        key = self.c_key
        if not tool:
            r = self._keyed(stream, windows, key, TEXT, block, p, ev, ee, start, end, bs)
            if r != DECLINE:
                parts = self.s_parts
                if parts:
                    parts.discard(key)
            return r
        return self._keyed(stream, windows, key, JSON, block, p, ev, ee, start, end, bs)

    cdef int _responses(self, stream, dict windows, bytes block, const unsigned char *p,
                        Py_ssize_t ev, Py_ssize_t ee) except -2:
        self.r_holds = False
        cdef Py_ssize_t i = ev
        cdef const unsigned char *q
        if lit(p, i, ee, b"event: ", 7) > 0:
            q = <const unsigned char *> memchr(p + i, 10, ee - i)
            i = q - p + 1
        i = lit(p, i, ee, b'data: {"type":"response.', 24)
        if i < 0:
            return DECLINE
        cdef Py_ssize_t ts = i - 9  # `response.` ...
        cdef int t
        if lit(p, i, ee, b"output_text.delta\"", 18) > 0:
            t, i = 0, i + 18
        elif lit(p, i, ee, b"refusal.delta\"", 14) > 0:
            t, i = 1, i + 14
        elif lit(p, i, ee, b"function_call_arguments.delta\"", 30) > 0:
            t, i = 2, i + 30
        else:
            return DECLINE
        cdef Py_ssize_t te = i - 1
        cdef long long seq = 0, oi = 0, ci = -1
        cdef Py_ssize_t item_s, item_e, start, end, a
        cdef bint bs = False
        if lit(p, i, ee, b',"sequence_number":', 19) > 0:
            i = digits(p, i + 19, ee, &seq)
            i = lit(p, i, ee, b',"item_id":"', 12)
            item_s = i
            i = name(p, i, ee, True)
            item_e = i
            i = lit(p, i, ee, b'","output_index":', 17)
            i = digits(p, i, ee, &oi)
            if i < 0:
                return DECLINE
            if lit(p, i, ee, b',"content_index":', 17) > 0:
                i = digits(p, i + 17, ee, &ci)
            i = lit(p, i, ee, b',"delta":"', 10)
            start = i
            end = jstr(p, i, ee, &bs)
            if end < 0:
                return DECLINE
            i = self._tail(p, end + 1, ee)
            if lit(p, i, ee, b"}\n\n", 3) != ee:
                return DECLINE
        else:
            if lit(p, i, ee, b',"content_index":', 17) > 0:
                i = digits(p, i + 17, ee, &ci)
            i = lit(p, i, ee, b',"delta":"', 10)
            start = i
            end = jstr(p, i, ee, &bs)
            if end < 0:
                return DECLINE
            i = lit(p, end + 1, ee, b',"item_id":"', 12)
            item_s = i
            i = name(p, i, ee, True)
            item_e = i
            i = lit(p, i, ee, b'"', 1)
            i = self._tail(p, i, ee)
            i = lit(p, i, ee, b',"output_index":', 16)
            i = digits(p, i, ee, &oi)
            i = lit(p, i, ee, b',"sequence_number":', 19)
            i = digits(p, i, ee, &seq)
            if i < 0 or lit(p, i, ee, b"}\n\n", 3) != ee:
                return DECLINE
        if has_u(p + ev, ee - ev) or not utf8_ok(p + ev, ee - ev):
            return DECLINE
        if t != 2 and ci < 0:
            return DECLINE
        # the channel: that of the delta before, nearly always
        cdef Py_ssize_t il = item_e - item_s
        if (self.r_item is None or t != self.r_t or oi != self.r_oi or ci != self.r_ci
                or PyBytes_GET_SIZE(self.r_item) != il or memcmp(PyBytes_AS_STRING(self.r_item), p + item_s, il) != 0):
            tname = PyUnicode_DecodeUTF8(<const char *> p + ts, te - ts, NULL)
            item = PyUnicode_DecodeUTF8(<const char *> p + item_s, il, NULL)
            fields = {"item_id": item, "output_index": oi}
            if t == 2:
                key = (item, "args")
            else:
                fields["content_index"] = ci
                key = (item, ci, self.deltas[tname][0])
            fields["type"] = tname
            self.r_key, self.r_fields, self.r_mode = key, fields, self.deltas[tname][1]
            self.r_t, self.r_oi, self.r_ci = t, oi, ci
            self.r_item = PyBytes_FromStringAndSize(<const char *> p + item_s, il)
        cdef int r = self._keyed(stream, windows, self.r_key, self.r_mode, block, p, ev, ee, start, end, bs)
        if r == DECLINE:
            return r
        if self.w_key is not self.r_key:  # once a run per channel (on_raw: each event)
            stream.where[self.r_key] = self.r_fields
            self.w_key = self.r_key
        if seq > self.seq_max:
            self.seq_max = seq
        if r == NOTHING:  # all held: an empty delta, no gap
            self._new = block[ev:start] + block[end:ee]
            return NEW
        return r

    cdef inline Py_ssize_t _tail(self, const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept:
        # (?:,"logprobs":\[\])?(?:,"obfuscation":"[^"\\\r\n]*")?
        if i < 0:
            return -1
        if lit(p, i, n, b',"logprobs":[]', 14) > 0:
            i += 14
        if lit(p, i, n, b',"obfuscation":"', 16) > 0:
            i += 16
            while i < n and p[i] != 34:
                if p[i] == 92 or p[i] == 13 or p[i] == 10:
                    return -1
                i += 1
            if i >= n:
                return -1
            i += 1
        return i
