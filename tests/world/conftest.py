"""The world's tests run tiny tensors: one torch thread avoids thread start-up and contention
costs that dwarf the work (restored after each test)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
