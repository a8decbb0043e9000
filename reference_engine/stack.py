"""Persistent PDA stacks: immutable linked lists of return addresses (and object
frames, negative entries: see :func:`reference_engine.pda.frame_ret`).

A stack is an integer id into a :class:`StackPool`. ``push(ret, parent)`` allocates
one node (or finds the identical one: nodes are hash-consed, so equal stacks have
equal ids and a configuration ``(state, stack)`` hashes in O(1)); popping follows
the parent. Nothing is ever copied or mutated, which is what makes a matcher's
``rollback(n)`` O(1) and lets a mask computation branch on a token for free.
"""

from __future__ import annotations

EMPTY = 0


class StackPool:
    """All stack nodes of one compiled grammar (shared by its matchers)."""

    __slots__ = ("ret", "parent", "depth", "_index")

    def __init__(self) -> None:
        self.ret: list[int] = [-1]
        self.parent: list[int] = [-1]
        self.depth: list[int] = [0]
        self._index: dict[tuple[int, int], int] = {}

    def push(self, ret: int, parent: int) -> int:
        key = (ret, parent)
        node = self._index.get(key)
        if node is None:
            node = len(self.ret)
            self._index[key] = node
            self.ret.append(ret)
            self.parent.append(parent)
            self.depth.append(self.depth[parent] + 1)
        return node

    def top(self, stack: int) -> int:
        return self.ret[stack]

    def pop(self, stack: int) -> int:
        return self.parent[stack]

    def entries(self, stack: int, k: int) -> tuple[int, ...]:
        """The top ``k`` return addresses, from the top down (fewer if the stack is
        shorter)."""
        ret, parent = self.ret, self.parent
        out = []
        for _ in range(k):
            if stack == EMPTY:
                break
            out.append(ret[stack])
            stack = parent[stack]
        return tuple(out)

    def frames(self, stack: int) -> list[int]:
        """Return addresses from the top down (for debugging and tests)."""
        out = []
        while stack != EMPTY:
            out.append(self.ret[stack])
            stack = self.parent[stack]
        return out

    def __len__(self) -> int:
        return len(self.ret)
