// SHA-256 of a byte string, as lowercase hex: the key of the kernel cache.
// Assumes nothing; a plain implementation of FIPS 180-4 (speed is irrelevant next to g++).
#pragma once
#include <string>
#include <string_view>

namespace cdynamo::cache {

std::string sha256_hex(std::string_view data);

}  // namespace cdynamo::cache
