# cython: language_level=3, boundscheck=False, wraparound=False
"""The capture's per-read step, compiled (inspect/tee.py says what it is: `PyTee` is the
reference, `Tee` the class chosen once at import). Hand-written: what a read costs the
capture where the reference would only add its bytes to the sides (a read that went out
as it came; any read once the client's side is kept apart), in C: the read and what went
out for it are queued here by reference, and reach the sides (tee.Kept.add, once for all
of them) when they hold a chunk, or before any Python code of the Tee runs (another
read, a side read). The adapter's StreamCall inside it is not called but read through:
its reverser's feed called here, and StreamCall.failed where that raises, so that a read
costs one Python-level call of ours (the Tee's), the reverser's compiled feed beneath it."""

from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_SIZE

cdef Py_ssize_t LAST = 8  # tee.LAST, the last pieces kept (set from it: Read._states)


cdef inline Py_ssize_t _size(list pieces, Py_ssize_t k):
    """The bytes of the k pieces, -1 where one is not bytes or is empty (the reference's way)."""
    cdef Py_ssize_t m = 0, i
    for i in range(k):
        p = pieces[i]
        if type(p) is not bytes or not PyBytes_GET_SIZE(p):
            return -1
        m += PyBytes_GET_SIZE(p)
    return m


cdef class Read:
    """The base of tee.CTee: the Tee's fields, and its read (`__call__`) where the
    reference would only add bytes to the sides; every other read is the reference's
    (`_py_after`, `_py_call`: Python)."""

    cdef public list last  # the last LAST pieces the client got, written round (tee.LAST)
    cdef public Py_ssize_t at  # where the next goes
    cdef public object reverser
    cdef object _inner
    cdef object feed  # the inner StreamCall's feed, called here (None: the inner callable is called)
    cdef public bint same, final, released
    cdef object _up, _down
    cdef list q_up, q_down  # what the sides take, not yet on them: upstream's reads, the client's pieces
    cdef Py_ssize_t n_up, n_down  # their bytes
    cdef Py_ssize_t room, droom  # what each side takes before a read must go the reference's way (-1: ask)
    cdef Py_ssize_t chunk  # flushed from this many bytes on (tee.CHUNK)
    cdef bint apart  # the client's side is a Kept of its own: it takes what went out
    cdef bint patched  # the client's side is upstream's with the changed reads in place (tee.Patched)
    cdef Py_ssize_t patch_max  # a Patched takes edits while its pieces hold at most this many bytes (tee.PATCH_MAX)

    def __cinit__(self, *args, **kwargs):
        self.q_up = []
        self.q_down = []
        self.n_up = self.n_down = 0
        self.room = -1

    def _states(self, last):
        global LAST
        LAST = last

    @property
    def inner(self):
        return self._inner

    @inner.setter
    def inner(self, value):
        """The callable the Tee wraps. The adapter's StreamCall (a `feed` and a `failed`:
        mitm/callables.py) is read through here: its feed called, and for what it gives
        the list StreamCall's call would give; anything else (a StreamCall that broke, a
        wrapper: mitm/metrics.Timed) is called."""
        self._inner = value
        ok = callable(getattr(value, "failed", None)) and getattr(value, "broke", True) is False
        self.feed = value.feed if ok else None

    @property
    def up(self):
        self._flush()
        return self._up

    @up.setter
    def up(self, value):
        self._flush()
        self._up = value
        self.room = -1

    @property
    def down(self):
        self._flush()
        return self._down

    @down.setter
    def down(self, value):
        self._flush()
        self._down = value
        self.room = -1

    cdef int _flush(self) except -1:
        """The queued bytes onto the sides, as the reference adds them one by one (the
        list to tee.Kept.took, not joined here: the bytes Kept keeps are the same; only
        where it cuts its compressed chunks moves). A side the queue fills is a Kept."""
        cdef list q
        cdef Py_ssize_t n
        self.room = -1
        if self.n_up:
            q, n = self.q_up, self.n_up
            self.q_up = []
            self.n_up = 0
            self._up.took(q, n)
        if self.q_down:
            q, n = self.q_down, self.n_down
            self.q_down = []
            self.n_down = 0
            self._down.took(q, n)
        return 0

    def __call__(self, data):
        cdef Py_ssize_t n, m, k
        cdef list pieces
        if type(data) is not bytes or not PyBytes_GET_SIZE(data):
            self._flush()
            return self._py_call(data)
        if self.feed is not None:  # StreamCall's call, for a read with bytes in it
            try:
                o = self.feed(data)
            except Exception as e:
                self.feed = None  # it broke: its call from now on
                out = self._inner.failed(e)
            except BaseException:  # (as the call lets it through)
                self._flush()
                self._took(data, [])
                self.reverser = None  # (the reference's way)
                raise
            else:
                out = [o] if o else []
        else:
            try:
                out = self._inner(data)
            except BaseException:
                self._flush()
                self._took(data, [])  # nothing went out for it (the reference's way)
                self.reverser = None
                raise
        if type(out) is list:
            pieces = <list> out
            if self.room < 0:
                self._flush()
                self.room, self.droom, self.apart, self.chunk, self.patched, self.patch_max = self._fast_room()
            n = PyBytes_GET_SIZE(data)
            k = len(pieces)
            if k == 1 and pieces[0] is data:
                if n <= self.room and (not self.apart or n <= self.droom):
                    self.q_up.append(data)
                    self.n_up += n
                    self.room -= n
                    if self.apart:
                        self.q_down.append(data)
                        self.n_down += n
                        self.droom -= n
                    self._sent(data)
                    return self._queued(pieces)
            elif self.patched and n <= self.room:
                # a changed read (or one held back: no piece) while the client's side is
                # upstream's with the changed reads in place: upstream's copy takes the read,
                # the Patched the edit, as the reference's _took does while the Patched's
                # pieces hold at most PATCH_MAX bytes (past it: the reference packs them)
                m = _size(pieces, k)
                down = self._down
                if m >= 0 and down.held <= self.patch_max:
                    start = self._up.size + self.n_up
                    self.q_up.append(data)
                    self.n_up += n
                    self.room -= n
                    # Patched.edit, in place (a Python call a changed read): the span
                    # (start, end, m: the pieces' bytes) and the pieces
                    down.spans.extend((start, start + n, m))
                    (<list?> down.pieces).extend(pieces)
                    down.delta += m - n
                    down.held += m
                    down.changed += m
                    if down.held > self.patch_max:
                        self.room = 0  # the next read the reference's way: it packs them (or goes apart)
                    for p in pieces:
                        self._sent(p)
                    return self._queued(pieces)
            elif self.apart and n <= self.room:
                m = _size(pieces, k)
                if 0 <= m <= self.droom:
                    self.q_up.append(data)
                    self.n_up += n
                    self.room -= n
                    if k:
                        self.q_down.extend(pieces)
                        self.n_down += m
                        self.droom -= m
                        for p in pieces:
                            self._sent(p)
                    return self._queued(pieces)
        self._flush()
        return self._py_after(data, out)

    cdef inline int _sent(self, object piece) except -1:
        """tee._Tee._sent: piece among the last LAST (over the oldest), as the reference
        writes it round."""
        cdef list last = self.last
        cdef Py_ssize_t at = self.at
        if last is None:
            raise TypeError("Tee.last is not a list")
        if PyList_GET_SIZE(last) < LAST:
            last.append(piece)
        else:
            last[at if 0 <= at < LAST else 0] = piece
        self.at = at + 1 if at + 1 < LAST else 0
        return 0

    cdef list _queued(self, list pieces):
        cdef Py_ssize_t room, droom
        if self.n_up >= self.chunk or self.n_down >= self.chunk:
            # the queued bytes onto the sides, each taking them as counted here (no more
            # than its room): what each takes after is what was left of it, and the next
            # read need not ask _fast_room again (a Python call a chunk)
            room, droom = self.room, self.droom
            self._flush()
            self.room, self.droom = room, droom
        return pieces
