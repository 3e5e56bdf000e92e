// Spin-then-block waiting, as OpenMP runtimes wait (libgomp spins ~300k polls, Intel's KMP_BLOCKTIME 200 ms) and
// a GPU's stream waits on an event: a thread that is about to sleep polls its condition for a short while first.
// On a VM a sleeping thread woken onto an idle vCPU starts ~50 us later (an IPI to a halted vCPU); DeepSpeed's CPU
// Adam and PyTorch's intra-op pool do not pay that per parallel region, so the engine's pools and the host
// device's streams do not either. The poll yields the core, so a runnable thread is not kept from it.
//   if (!spin_until([&] { return flag.load(std::memory_order_acquire); })) { /* block on the condition variable */ }
#pragma once

#include <sched.h>

#include <chrono>

namespace zs::exec {

inline constexpr std::chrono::microseconds kSpinBudget{200};

// Polls pred() for up to kSpinBudget; true as soon as it holds, false when the budget is spent.
template <class Pred>
bool spin_until(Pred&& pred) {
  const auto until = std::chrono::steady_clock::now() + kSpinBudget;
  // The clock is read at every turn (a vDSO call, ~20 ns beside the yield's ~1 us): a poller that lost its core for
  // longer than the budget (2 vCPUs, CPU Adam on both) stops at its next turn instead of yielding 15 more times,
  // each a trip through the scheduler that the busy threads pay for (docs/notes/engine-validation.md: small ZeRO-Infinity's
  // optimizer phase 24.2-35.6 ms checking every 16th turn, 21.9-24.3 ms checking every turn).
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    sched_yield();
  }
}

}  // namespace zs::exec
