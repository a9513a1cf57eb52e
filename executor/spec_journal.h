// The executor's journal format (STATE/specs/journal): one line per saved
// launch spec or forgotten id, appended as the executor changes them, so
// that one fdatasync per loop turn makes every change of the turn durable
// (spec_store.h says when the spec files catch up).
//
//   <crc32, 8 hex digits> {"id":N,"spec":[{...LaunchSpec...}]}\n   saved
//   <crc32, 8 hex digits> {"id":N,"spec":[]}\n                      forgotten
//
// The checksum covers the JSON after the blank. A line is taken only whole
// and intact: a torn last line (a write cut short) or a zero-filled tail
// is ignored, and a damaged line before the end is skipped and reported.
// Each saved spec carries its revision, so the lines need no order: the
// lines after a damaged one are still good.
#ifndef HPCB_EXECUTOR_SPEC_JOURNAL_H_
#define HPCB_EXECUTOR_SPEC_JOURNAL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "executor/launch_spec.h"

namespace hpcb::executor {

// CRC-32 (IEEE 802.3, reflected), as zlib computes it.
std::uint32_t Crc32(std::string_view bytes);

// The line (with its '\n') that records `spec` as saved, given its encoding.
std::string SpecSavedLine(std::uint64_t id, std::string_view encoded_spec);
// The line that records `id` as forgotten.
std::string SpecForgottenLine(std::uint64_t id);

enum class SpecJournalTail {
  kClean,    // every line was whole and intact
  kTorn,     // the last line was not: a write cut short; ignored
  kCorrupt,  // a line before the last was not; skipped
};

struct SpecJournalReplay {
  // The newest spec (highest revision) of each id the lines name, or
  // nullopt once a line forgot it: ids are never reused, so a forgotten
  // id stays forgotten whatever else mentions it.
  std::map<std::uint64_t, std::optional<LaunchSpec>> latest;
  std::size_t lines = 0;    // whole, intact lines taken, in every call
  std::size_t skipped = 0;  // damaged or torn lines left out, in every call
  // Of the last call's text only: the worst line, and the first bad one.
  SpecJournalTail tail = SpecJournalTail::kClean;
  std::string problem;
};

// Adds the lines of `text` to `replay` (called once per journal file, in
// any order: revisions, not positions, say which spec is newer).
void ReplaySpecJournal(std::string_view text, SpecJournalReplay& replay);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_SPEC_JOURNAL_H_
