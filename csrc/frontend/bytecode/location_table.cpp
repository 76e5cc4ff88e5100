// The PEP 657 location table (co_linetable) of CPython 3.11/3.12: decoding to one position per
// code unit, and encoding that reproduces the compiler's choice of entry forms byte for byte.
// Assumes the format is identical in 3.11 and 3.12 (Objects/locations.md), which it is.
#include <cstdlib>

#include "common/error.h"
#include "frontend/bytecode/tables.h"

namespace cdynamo::bytecode {

namespace {

// Entry kinds, from the 4 bits after the start bit of an entry's first byte.
constexpr int kShortMax = 9;      // 0..9: same line, column group in the code
constexpr int kOneLine0 = 10;     // 10..12: line delta 0..2, one byte per column
constexpr int kNoColumns = 13;    // line delta only
constexpr int kLong = 14;         // everything as varints
constexpr int kNone = 15;         // no location
constexpr int kMaxEntryUnits = 8;  // three bits of length

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ >= end_; }
  int byte() {
    if (p_ >= end_) throw InternalError("co_linetable ends inside an entry");
    return *p_++;
  }
  // Little-endian 6-bit groups, bit 6 set on every group but the last.
  int varint() {
    int b = byte();
    int value = b & 63;
    int shift = 6;
    while (b & 64) {
      b = byte();
      value |= (b & 63) << shift;
      shift += 6;
    }
    return value;
  }
  int svarint() {
    int u = varint();
    return (u & 1) ? -(u >> 1) : (u >> 1);
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

class Writer {
 public:
  void first_byte(int kind, int units) { out.push_back(static_cast<char>(0x80 | (kind << 3) | (units - 1))); }
  void byte(int b) { out.push_back(static_cast<char>(b)); }
  void varint(unsigned value) {
    while (value >= 64) {
      byte(static_cast<int>((value & 63) | 64));
      value >>= 6;
    }
    byte(static_cast<int>(value));
  }
  void svarint(int value) {
    varint(value < 0 ? ((static_cast<unsigned>(-value) << 1) | 1) : (static_cast<unsigned>(value) << 1));
  }
  std::string out;
};

// One entry covering at most 8 code units. Mirrors the choice made by CPython's assembler
// (write_location_info_entry) so that re-encoding a decoded table gives the same bytes.
void write_entry(Writer& w, const Position& pos, int units, int& prev_line) {
  if (pos.line < 0) {
    w.first_byte(kNone, units);
    return;
  }
  int delta = pos.line - prev_line;
  int col = pos.col, end_col = pos.end_col;
  if (col < 0 || end_col < 0) {
    if (pos.end_line == pos.line || pos.end_line == -1) {
      w.first_byte(kNoColumns, units);
      w.svarint(delta);
      prev_line = pos.line;
      return;
    }
  } else if (pos.end_line == pos.line) {
    if (delta == 0 && col < 80 && end_col - col < 16 && end_col >= col) {
      w.first_byte(col >> 3, units);
      w.byte(((col & 7) << 4) | (end_col - col));
      return;
    }
    if (delta >= 0 && delta < 3 && col < 128 && end_col < 128) {
      w.first_byte(kOneLine0 + delta, units);
      w.byte(col);
      w.byte(end_col);
      prev_line = pos.line;
      return;
    }
  }
  w.first_byte(kLong, units);
  w.svarint(delta);
  // The format cannot say "ends before it starts"; positions made by hand are clamped.
  w.varint(static_cast<unsigned>(pos.end_line >= pos.line ? pos.end_line - pos.line : 0));
  w.varint(static_cast<unsigned>(col + 1));
  w.varint(static_cast<unsigned>(end_col + 1));
  prev_line = pos.line;
}

}  // namespace

void decode_location_table(const uint8_t* data, size_t size, int first_line, size_t n_units,
                           std::vector<Position>& positions) {
  positions.assign(n_units, Position{});
  Reader r(data, size);
  int line = first_line;
  size_t unit = 0;
  while (!r.done() && unit < n_units) {
    int first = r.byte();
    if (!(first & 0x80)) throw InternalError("co_linetable entry without its start bit");
    int kind = (first >> 3) & 15;
    int units = (first & 7) + 1;
    Position pos;
    if (kind == kNone) {
      // Leaves `line` alone: the next delta is relative to the last real line.
    } else if (kind == kLong) {
      line += r.svarint();
      pos.line = line;
      pos.end_line = line + r.varint();
      pos.col = r.varint() - 1;
      pos.end_col = r.varint() - 1;
    } else if (kind == kNoColumns) {
      line += r.svarint();
      pos.line = pos.end_line = line;
    } else if (kind >= kOneLine0) {
      line += kind - kOneLine0;
      pos.line = pos.end_line = line;
      pos.col = r.byte();
      pos.end_col = r.byte();
    } else {
      static_assert(kShortMax == 9);
      int second = r.byte();
      pos.line = pos.end_line = line;
      pos.col = kind * 8 + ((second >> 4) & 7);
      pos.end_col = pos.col + (second & 15);
    }
    for (int i = 0; i < units && unit < n_units; ++i) positions[unit++] = pos;
  }
}

std::string encode_location_table(const std::vector<LocationRun>& runs, int first_line) {
  Writer w;
  int prev_line = first_line;
  // Each run is cut into entries of 8 units from its start; pieces after the first have a line
  // delta of 0, so they often take the short form.
  for (const LocationRun& run : runs) {
    int units = run.units;
    while (units > kMaxEntryUnits) {
      write_entry(w, run.position, kMaxEntryUnits, prev_line);
      units -= kMaxEntryUnits;
    }
    if (units > 0) write_entry(w, run.position, units, prev_line);
  }
  return std::move(w.out);
}

}  // namespace cdynamo::bytecode
