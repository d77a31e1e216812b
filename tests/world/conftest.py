"""The world's tests run tiny tensors: one torch thread avoids thread start-up and contention
costs that dwarf the work (restored after each test)."""

from tests.threads import one_torch_thread  # noqa: F401  (an autouse fixture)
