#include "executor/spec_journal.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "protocol/codec.h"

namespace hpcb::executor {
namespace {

constexpr std::array<std::uint32_t, 256> MakeCrcTable() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t n = 0; n < 256; ++n) {
    std::uint32_t c = n;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = MakeCrcTable();

// The JSON of one line. Both keys are always written.
struct SpecJournalEntry {
  std::uint64_t id = 0;
  std::optional<LaunchSpec> spec;

  template <class A>
  void load(A& ar) {
    protocol::Get(ar, "id", id);
    protocol::Get(ar, "spec", spec);
  }
  Result<void> Validate() const {
    if (id == 0) return InvalidArgument("journal line names job 0");
    if (!spec) return Ok();
    if (spec->id != id) return InvalidArgument("journal line holds the spec of another job");
    return spec->Validate();
  }
};

std::string Hex8(std::uint32_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(8, '0');
  for (int i = 7; i >= 0; --i, value >>= 4)
    text[static_cast<std::size_t>(i)] = kDigits[value & 0xF];
  return text;
}

std::string Line(std::string_view json) {
  std::string line = Hex8(Crc32(json));
  line += ' ';
  line += json;
  line += '\n';
  return line;
}

// The entry a line holds, or why it holds none.
Result<SpecJournalEntry> ParseLine(std::string_view line) {
  if (line.size() < 10 || line[8] != ' ') return InvalidArgument("no checksum at the line's start");
  std::uint32_t crc = 0;
  auto [end, ec] = std::from_chars(line.data(), line.data() + 8, crc, 16);
  if (ec != std::errc() || end != line.data() + 8) {
    return InvalidArgument("the checksum is not 8 hex digits");
  }
  const std::string_view json = line.substr(9);
  if (Crc32(json) != crc) return InvalidArgument("the checksum does not match the line");
  return protocol::Decode<SpecJournalEntry>(json);
}

}  // namespace

std::uint32_t Crc32(std::string_view bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (char byte : bytes)
    c = kCrcTable[(c ^ static_cast<unsigned char>(byte)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string SpecSavedLine(std::uint64_t id, std::string_view encoded_spec) {
  std::string json = "{\"id\":" + std::to_string(id) + ",\"spec\":[";
  json += encoded_spec;
  json += "]}";
  return Line(json);
}

std::string SpecForgottenLine(std::uint64_t id) {
  return Line("{\"id\":" + std::to_string(id) + ",\"spec\":[]}");
}

void ReplaySpecJournal(std::string_view text, SpecJournalReplay& replay) {
  replay.tail = SpecJournalTail::kClean;
  replay.problem.clear();
  // Past the last byte a writer could have meant, only what a crash
  // leaves after an append cut short (nothing, or a zero-filled tail).
  const std::size_t content_end = text.find_last_not_of(std::string_view("\n\0", 2)) + 1;
  std::size_t at = 0;
  std::size_t number = 0;
  while (at < content_end) {
    const std::size_t newline = text.find('\n', at);
    const bool whole = newline != std::string_view::npos;
    const std::size_t end = whole ? newline : text.size();
    const std::string_view line = text.substr(at, end - at);
    const bool last = end + 1 >= content_end;
    at = end + 1;
    ++number;
    if (line.empty()) continue;  // a blanked line (spec_store.h)
    Result<SpecJournalEntry> entry =
        whole ? ParseLine(line) : Result<SpecJournalEntry>(InvalidArgument("the line has no end"));
    if (!entry) {
      // Revisions, not positions, order the lines, so one bad line costs
      // only itself: the rest are still taken.
      if (replay.tail != SpecJournalTail::kCorrupt) {
        replay.tail = last ? SpecJournalTail::kTorn : SpecJournalTail::kCorrupt;
        replay.problem = "line " + std::to_string(number) + ": " + entry.error().message();
      }
      ++replay.skipped;
      continue;
    }
    ++replay.lines;
    auto [it, added] = replay.latest.try_emplace(entry->id, entry->spec);
    if (added) continue;
    std::optional<LaunchSpec>& known = it->second;
    if (!known) continue;  // forgotten for good
    if (!entry->spec || entry->spec->revision >= known->revision) known = std::move(entry->spec);
  }
}

}  // namespace hpcb::executor
