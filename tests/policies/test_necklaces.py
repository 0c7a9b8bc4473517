"""Tests of policies.necklaces against brute force, hand-derived cases and published values."""

import itertools

import numpy as np
import pytest

from policies import necklaces as nk
from policies.necklaces import exit_words as exits_module
from policies.necklaces import gray, words

PRIMES = (2, 3, 5, 7, 11, 13)
# OEIS A000031: binary necklaces of length m.
A000031 = {1: 2, 2: 3, 3: 4, 4: 6, 5: 8, 6: 14, 7: 20, 8: 36, 9: 60, 10: 108, 11: 188, 12: 352, 13: 632, 14: 1182, 15: 2192, 16: 4116}


# ----------------------------------------------------------------------------
# Independent brute force


def brute_rep(word):
    return min(word[k:] + word[:k] for k in range(len(word)))


def brute_necklaces(m):
    return {brute_rep("".join(p)) for p in itertools.product("AB", repeat=m)}


def brute_adjacent(u, v):
    """Some rotation of u and some rotation of v differ in exactly one letter."""
    if len(u) != len(v):
        return False
    rot_u = {u[k:] + u[:k] for k in range(len(u))}
    rot_v = {v[k:] + v[:k] for k in range(len(v))}
    return any(sum(a != b for a, b in zip(x, y, strict=True)) == 1 for x in rot_u for y in rot_v)


def brute_graph(m):
    nodes = sorted(brute_necklaces(m))
    return {u: {v for v in nodes if brute_adjacent(u, v)} for u in nodes}


def brute_chains(m):
    """Every simple path from A^m to B^m in the necklace graph."""
    graph = brute_graph(m)
    source, target = "A" * m, "B" * m
    out, path = [], [source]

    def walk(u):
        for v in sorted(graph[u]):
            if v == target:
                out.append((*path, v))
            elif v not in path:
                path.append(v)
                walk(v)
                path.pop()

    walk(source)
    return out


def assert_valid_chain(chain, m):
    assert chain[0] == "A" * m and chain[-1] == "B" * m
    assert all(len(w) == m and set(w) <= {"A", "B"} for w in chain)
    assert all(w == brute_rep(w) for w in chain)
    assert len(set(chain)) == len(chain)
    for u, v in itertools.pairwise(chain):
        assert brute_adjacent(u, v), (u, v)


def brute_complement_symmetric(chain):
    flip = str.maketrans("AB", "BA")
    return all(brute_rep(w.translate(flip)) == v for w, v in zip(chain, reversed(chain), strict=True))


# ----------------------------------------------------------------------------
# Words and necklaces


def test_necklace_and_rotations():
    assert nk.necklace("BAA") == "AAB"
    assert nk.necklace("BABA") == "ABAB"
    assert nk.necklace("ABBAB") == "ABABB"
    assert nk.rotations("AAB") == ("AAB", "ABA", "BAA")
    assert nk.rotations("ABAB") == ("ABAB", "BABA")
    assert nk.rotations("AAAA") == ("AAAA",)
    assert nk.complement("AABAB") == "BBABA"


@pytest.mark.parametrize("m", range(1, 13))
def test_necklaces_brute_force(m):
    found = nk.necklaces(m)
    assert set(found) == brute_necklaces(m)
    assert len(found) == len(set(found))
    assert list(found) == sorted(found, key=lambda w: (w.count("B"), w))
    assert found[0] == "A" * m and found[-1] == "B" * m


@pytest.mark.parametrize("m", range(1, 17))
def test_count_necklaces(m):
    assert nk.count_necklaces(m) == A000031[m] == len(nk.necklaces(m))


@pytest.mark.parametrize("m", [2, 3, 5, 7, 11, 13, 17, 19, 23, 31, 61])
def test_count_necklaces_prime(m):
    assert nk.count_necklaces(m) == 2 + (2**m - 2) // m
    assert (2**m - 2) % m == 0


def test_neighbours_and_adjacent():
    assert nk.neighbours("AABB") == ("AAAB", "ABBB")
    assert nk.neighbours("ABAB") == ("AAAB", "ABBB")
    assert nk.adjacent("AAB", "ABB") and nk.adjacent("BAA", "BAB")
    assert not nk.adjacent("AAA", "ABB") and not nk.adjacent("AAB", "AAAB")
    for m in (3, 4, 6):
        graph = brute_graph(m)
        for u in graph:
            assert set(nk.neighbours(u)) == graph[u]


# ----------------------------------------------------------------------------
# Gray chains


def test_gray_chain_m4_hand_derived():
    # Necklaces AAAA | AAAB | AABB ABAB | ABBB | BBBB (by number of B): levels 1
    # and 3 hold one necklace, so a chain passes level 2 once: 5 of 6 necklaces.
    result = nk.gray_chain(4)
    assert result.optimal and result.length == 5 and result.upper_bound == 5
    assert result.chain in {("AAAA", "AAAB", "AABB", "ABBB", "BBBB"), ("AAAA", "AAAB", "ABAB", "ABBB", "BBBB")}
    assert set(nk.necklaces(4)) - set(result.chain) in ({"AABB"}, {"ABAB"})


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6])
def test_gray_chain_optimal_by_brute_force(m):
    chains = brute_chains(m)
    longest = max(len(c) for c in chains)
    result = nk.gray_chain(m)
    assert result.optimal and result.length == longest == result.upper_bound
    assert result.chain in chains
    # complement-symmetric whenever some longest chain is
    assert result.symmetric == any(len(c) == longest and brute_complement_symmetric(c) for c in chains)


@pytest.mark.parametrize("m", [4, 5, 6])
def test_search_bound_is_admissible(m):
    """The pruning bound never falls below the longest completion of a partial chain (brute force)."""
    graph = gray._graph(m)
    index = {w: i for i, w in enumerate(graph.words)}
    search = gray._Search(graph, deadline=float("inf"))
    longest_rest = {}  # prefix -> most necklaces after its last one, over all chains
    for chain in brute_chains(m):
        for k in range(1, len(chain)):
            prefix = chain[:k]
            longest_rest[prefix] = max(longest_rest.get(prefix, 0), len(chain) - k)
    tight = 0
    for prefix, rest in longest_rest.items():
        visited = sum(1 << index[w] for w in prefix)
        bound = search.bound(index[prefix[-1]], visited)
        assert bound >= rest, (prefix, bound, rest)
        tight += bound == rest
    assert tight > 0
    # a dead end (target unreachable) is reported as -1
    if m == 6:
        cut = [w for w in graph.words if w.count("B") == 5]  # the only necklace with 5 B: ABBBBB
        visited = (1 << index["AAAAAA"]) | (1 << index[cut[0]])
        assert search.bound(index["AAAAAB"], visited) == -1


def test_gray_chain_m6_not_hamiltonian_nor_symmetric():
    result = nk.gray_chain(6)
    assert (result.length, nk.count_necklaces(6)) == (13, 14)
    assert not result.symmetric


@pytest.mark.parametrize("m", PRIMES)
def test_gray_chain_hamiltonian_for_primes(m):
    result = nk.gray_chain(m)
    assert result.length == nk.count_necklaces(m) == 2 + (2**m - 2) // m
    assert result.optimal and result.symmetric
    assert_valid_chain(result.chain, m)


@pytest.mark.parametrize("m", range(1, 14))
def test_gray_chain_valid(m):
    result = nk.gray_chain(m)
    assert_valid_chain(result.chain, m)
    assert result.m == m and result.length <= result.upper_bound <= nk.count_necklaces(m)
    assert nk.check_chain(result.chain) == result.chain
    assert result.symmetric == brute_complement_symmetric(result.chain)


def test_gray_chain_proved_lengths():
    # m = 7: n(7) = 2 + (2^7 - 2) / 7 = 20 (paper Theorem 4.3)
    assert nk.n_longest(7) == 20
    assert [nk.n_longest(m) for m in range(1, 10)] == [2, 3, 4, 5, 8, 13, 20, 33, 60]


def test_gray_chain_time_budget_runs_out():
    result = nk.gray_chain(16, time_budget=0.3)  # 4116 necklaces: no proof in 0.3 s
    assert not result.optimal
    assert result.length < result.upper_bound <= nk.count_necklaces(16)
    assert_valid_chain(result.chain, 16)
    with pytest.raises(ValueError, match=r"n\(16\) is not proved"):
        nk.n_longest(16, time_budget=0.3)


def test_gray_chain_is_cached_and_frozen():
    assert nk.gray_chain(5) is nk.gray_chain(5)
    with pytest.raises(AttributeError):
        nk.gray_chain(5).chain = ()


def test_check_chain_and_symmetry():
    assert nk.check_chain(["AAA", "ABA", "BAB", "BBB"]) == ("AAA", "AAB", "ABB", "BBB")
    assert nk.is_complement_symmetric(["AAA", "AAB", "ABB", "BBB"])
    assert nk.is_complement_symmetric(["AAAA", "AAAB", "ABAB", "ABBB", "BBBB"])
    assert not nk.is_complement_symmetric(["AAAAA", "AAAAB", "AAABB", "ABABB", "ABBBB", "BBBBB"])  # AAABB <-> AABAB


def test_a_gray_chain_result_stands_for_its_chain():
    """check_chain, is_complement_symmetric and exits take a GrayChain as well as its words (words.py knows it by its shape)."""
    result = nk.gray_chain(5)
    assert nk.check_chain(result) == result.chain
    assert nk.is_complement_symmetric(result) == nk.is_complement_symmetric(result.chain) == result.symmetric
    assert nk.exits(result) == nk.exits(result.chain) and nk.exit_table(result) == nk.exit_table(result.chain)


# ----------------------------------------------------------------------------
# Exits


def test_exits_m3_published():
    table = nk.exit_table(("AAA", "AAB", "ABB", "BBB"))
    assert table == (("BAA", "A"), ("ABA", "B"), ("BAB", "A"), ("ABB", "B"))
    assert nk.exit_table(nk.gray_chain(3)) == table


def test_exits_m4_published():
    table = nk.exit_table(("AAAA", "AAAB", "AABB", "ABBB", "BBBB"))
    assert table == (("BAAA", "A"), ("ABAA", "B"), ("BAAB", "A"), ("ABBA", "B"), ("BABB", "A"), ("ABBB", "B"))


def test_exits_m3_all_candidates_and_ends():
    ex = nk.exits(("AAA", "AAB", "ABB", "BBB"))
    assert [e.word for e in ex[1].right] == ["ABA", "AAB"]  # both move AAB -> ABB; ABA preferred
    assert [e.word for e in ex[2].left] == ["BAB", "BBA"]
    assert ex[0].left == () and ex[0].right_exit == nk.Exit(word="AAA", arm="B", target=1)
    assert ex[3].right == () and ex[3].left_exit == nk.Exit(word="BBB", arm="A", target=2)
    assert nk.exit_table(("AAA", "AAB", "ABB", "BBB"), ends=True)[0] == ("AAA", "B")


@pytest.mark.parametrize("m", range(2, 10))
def test_exits_complete_and_correct(m):
    chain = nk.gray_chain(m).chain
    for item in nk.exits(chain):
        i = item.index
        for direction, target in (("left", i - 1), ("right", i + 1)):
            found = getattr(item, direction)
            # brute force: every word of necklace i, every arm
            expected = set()
            if 0 <= target < len(chain):
                for k in range(m):
                    w = chain[i][k:] + chain[i][:k]
                    arm = "A" if w[0] == "B" else "B"
                    if brute_rep(w[1:] + arm) == chain[target]:
                        expected.add((w, arm))
                assert expected, (chain[i], chain[target])
            assert {(e.word, e.arm) for e in found} == expected
            for e in found:
                assert e.target == target and e.arm != e.word[0] and e.result == e.word[1:] + e.arm
                assert brute_rep(e.word) == chain[i]
            if found:  # the chosen exit has its second letter equal to the arm whenever a candidate has
                best = found[0]
                if any(e.word[1:2] == e.arm for e in found):
                    assert best.word[1:2] == best.arm


@pytest.mark.parametrize("m", [3, 4, 5, 7])
def test_exits_of_symmetric_chain_are_symmetric(m):
    result = nk.gray_chain(m)
    assert result.symmetric
    ex = nk.exits(result)
    n = result.length
    for i in range(n):
        right, mirror_left = ex[i].right_exit, ex[n - 1 - i].left_exit
        assert (right is None) == (mirror_left is None)
        if right is not None:
            assert nk.complement(right.word) == mirror_left.word and right.target == n - 1 - mirror_left.target


# ----------------------------------------------------------------------------
# Bad inputs


BAD = [
    (nk.necklace, ("ABC",), ValueError, "word must be a non-empty str over 'A' and 'B', got 'ABC'"),
    (nk.necklace, ("",), ValueError, "non-empty"),
    (nk.necklace, (3,), TypeError, "word must be a str"),
    (nk.necklaces, (0,), ValueError, "m must be >= 1, got 0"),
    (nk.necklaces, (2.0,), TypeError, "m must be an int, got 2.0"),
    (nk.count_necklaces, (True,), TypeError, "m must be an int"),
    (nk.gray_chain, (0,), ValueError, "m must be >= 1, got 0"),
    (nk.gray_chain, (3, -1), ValueError, "time_budget must be > 0, got -1"),
    (nk.gray_chain, (3, "1"), TypeError, "time_budget must be a number"),
    (nk.check_chain, ("AAABBB",), TypeError, "chain must be a sequence of words"),
    (nk.check_chain, (3,), TypeError, "chain must be a sequence of words, got 3"),
    (nk.check_chain, (["AAA"],), ValueError, "at least A"),
    (nk.check_chain, (["AAB", "ABB", "BBB"],), ValueError, "must run from 'AAA' to 'BBB'"),
    (nk.check_chain, (["AAA", "AAB", "ABA", "ABB", "BBB"],), ValueError, "visits necklace 'AAB' twice"),
    (nk.check_chain, (["AAA", "ABB", "BBB"],), ValueError, "chain\\[0\\] = 'AAA' and chain\\[1\\] = 'ABB' are not adjacent"),
    (nk.check_chain, (["AAA", "AABB", "BBB"],), ValueError, "length 3"),
    (nk.exits, (["AAA", "BBB"],), ValueError, "not adjacent"),
]


@pytest.mark.parametrize(("function", "args", "error", "pattern"), BAD)
def test_bad_inputs(function, args, error, pattern):
    with pytest.raises(error, match=pattern):
        function(*args)


# ----------------------------------------------------------------------------
# The package


OLD_ALL = ["Exit", "ExitWords", "GrayChain", "adjacent", "check_chain", "complement", "count_necklaces", "exit_table", "exits", "gray_chain",
           "is_complement_symmetric", "n_longest", "necklace", "necklaces", "neighbours", "rotations"]  # fmt: skip


def test_the_package_reexports_the_public_names_of_its_modules():
    """Every public name of the former module policies.necklaces is still there, and is the object of its submodule."""
    assert sorted(nk.__all__) == sorted(OLD_ALL)
    homes = {**dict.fromkeys(words.__all__, words), **dict.fromkeys(gray.__all__, gray), **dict.fromkeys(exits_module.__all__, exits_module)}
    assert set(homes) == set(nk.__all__) | {"integer_arg"}
    for name in nk.__all__:
        assert getattr(nk, name) is getattr(homes[name], name), name


def test_integer_arg():
    assert words.integer_arg("M", np.int64(3), 1) == 3 and type(words.integer_arg("M", np.int64(3), 1)) is int
    with pytest.raises(TypeError, match="M must be an int, got True"):
        words.integer_arg("M", True, 1)
    with pytest.raises(TypeError, match="n must be an int, got 2.5"):
        words.integer_arg("n", 2.5, 2)
    with pytest.raises(ValueError, match="n must be >= 2, got 1"):
        words.integer_arg("n", 1, 2)
