#pragma once
// CPU sides of the latency benchmarks: a dependent pointer chase and one agent of a
// compare-and-swap ping-pong.
#include <cstdint>

namespace mempath::cpu {

// Follows `steps` pointers from `start` and returns the element it ended on. Each load's
// address is the value of the load before, so no two loads overlap.
const void* chase(const void* start, uint64_t steps);

// One agent of a ping-pong on the byte `flag`: `exchanges` times, retries
// compare-and-swap(flag, from -> to) until it succeeds. With `ticks`, ticks[i] is
// cycle_ticks() right after the i-th success. Gives up when one wait for the partner
// exceeds `timeout_s` seconds; returns the number of successful exchanges.
uint64_t pingpong(uint8_t* flag, uint8_t from, uint8_t to, uint64_t exchanges, double timeout_s, uint64_t* ticks);

}  // namespace mempath::cpu
