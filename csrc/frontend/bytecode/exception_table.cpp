// co_exceptiontable of CPython 3.11/3.12: a flat list of (start, length, target, depth<<1|lasti)
// in code units. Assumes the format of Objects/exception_handling_notes.txt, same in both.
#include "common/error.h"
#include "frontend/bytecode/tables.h"

namespace cdynamo::bytecode {

namespace {

constexpr int kEntryStart = 128;  // set on the first byte of each entry
constexpr int kContinue = 64;     // set on every byte of a number but its last

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ >= end_; }
  // Big-endian 6-bit groups (unlike the location table, whose groups are little-endian).
  int varint() {
    if (p_ >= end_) throw InternalError("co_exceptiontable ends inside an entry");
    int b = *p_++;
    int value = b & 63;
    while (b & kContinue) {
      if (p_ >= end_) throw InternalError("co_exceptiontable ends inside a number");
      b = *p_++;
      value = (value << 6) | (b & 63);
    }
    return value;
  }
  bool at_entry_start() const { return (*p_ & kEntryStart) != 0; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

void write_number(std::string& out, int value, int first_flags) {
  if (value < 0 || value >= (1 << 30)) throw InternalError("exception table value out of range");
  int shift = 24;
  while (shift > 0 && value < (1 << shift)) shift -= 6;
  int flags = first_flags;
  for (; shift > 0; shift -= 6) {
    out.push_back(static_cast<char>(((value >> shift) & 63) | kContinue | flags));
    flags = 0;
  }
  out.push_back(static_cast<char>((value & 63) | flags));
}

}  // namespace

std::vector<ExceptionEntry> decode_exception_table(const uint8_t* data, size_t size) {
  std::vector<ExceptionEntry> entries;
  Reader r(data, size);
  while (!r.done()) {
    if (!r.at_entry_start()) throw InternalError("co_exceptiontable entry without its start bit");
    ExceptionEntry e;
    e.start = r.varint();
    e.end = e.start + r.varint();
    e.target = r.varint();
    int depth_lasti = r.varint();
    e.depth = depth_lasti >> 1;
    e.lasti = (depth_lasti & 1) != 0;
    entries.push_back(e);
  }
  return entries;
}

std::string encode_exception_table(const std::vector<ExceptionEntry>& entries) {
  std::string out;
  for (const ExceptionEntry& e : entries) {
    if (e.end <= e.start) throw InternalError("empty exception table entry");
    write_number(out, e.start, kEntryStart);
    write_number(out, e.end - e.start, 0);
    write_number(out, e.target, 0);
    write_number(out, (e.depth << 1) | (e.lasti ? 1 : 0), 0);
  }
  return out;
}

}  // namespace cdynamo::bytecode
