"""One torch thread for a test module or folder (import the fixture there; it is autouse):
tiny tensors run faster without thread start-up and contention, and a matmul on one thread
sums in one order, so bit-for-bit comparisons hold. The count is restored after each test."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
