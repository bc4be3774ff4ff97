#pragma once
// Kept for code written against the seed of issue 14: the kinds live in core/kinds.hpp.
#include "core/kinds.hpp"
