"""Every operation on 1-4 ranks, numpy and torch, sync and async."""

import pytest

SIZES = [1, 2, 3, 4]
LIBS = ["numpy", "torch"]


@pytest.fixture(params=LIBS)
def lib(request):
    if request.param == "torch":
        pytest.importorskip("torch")
    return request.param


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", [
    "all_reduce", "reduce", "broadcast", "gathers", "all_gather_in_place",
    "scatters", "all_to_alls", "overlap", "bad_inputs",
])
def test_collective(pools, n, case, lib):
    pools.get(n).check(case, lib)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_send_recv(pools, n, lib):
    pools.get(n).check("send_recv", lib)


@pytest.mark.parametrize("n", SIZES)
def test_recv_any_source(pools, n, lib):
    order = pools.get(n).check("recv_any", lib)[0]
    assert sorted(order) == sorted(list(range(1, n)) * 6)


@pytest.mark.parametrize("n", SIZES)
def test_barrier(pools, n):
    assert pools.get(n).check("barrier") == [True] * n


@pytest.mark.parametrize("n", SIZES)
def test_split(pools, n):
    ranks = pools.get(n).check("split")
    evens = [r for r in range(n) if r % 2 == 0]
    members = list(reversed(evens))
    assert ranks == [members.index(r) if r in members else None
                     for r in range(n)]


@pytest.mark.parametrize("n", SIZES)
def test_buffer_protocol_objects(pools, n):
    pools.get(n).check("buffers")


@pytest.mark.parametrize("n", [1, 3])
def test_torch_tensor_kinds(pools, n):
    pytest.importorskip("torch")
    pools.get(n).check("torch_specials")


def test_timeouts_from_arguments_and_env(pools):
    pools.get(2).check("timeouts")


@pytest.mark.parametrize("n", [2])
def test_wait_releases_the_gil(pools, n):
    ticks, busy = pools.get(n).check("gil_released")[0]
    assert ticks > 1000 and busy > 0
