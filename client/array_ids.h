// Job ids as users type them for kill, wait, attach, output, hold, release
// and --after: N, or A_I for element I of array A (as list shows it). An element's own id is
// found in a list of the arrays named, which the daemon answers with their
// elements' rows.
#ifndef HPCB_CLIENT_ARRAY_IDS_H_
#define HPCB_CLIENT_ARRAY_IDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "protocol/client_messages.h"

namespace hpcb::client {

struct TypedId {
  std::uint64_t id = 0;                // the job's, or the array's
  std::optional<std::uint32_t> index;  // A_I
};

// "argument ID: invalid job id: 'x'" for anything else.
Result<TypedId> ParseTypedId(const std::string& word);

// "A" or "A_I", as typed (and as Slurm names an element).
std::string TypedIdText(const TypedId& id);

// "3,4_2,7" for `flag` (--after, --after-any); an error names the flag and
// the word.
Result<std::vector<TypedId>> ParseTypedIdList(const std::string& text, const char* flag);

// The ids the list of `typed` ids asks about (each array's once).
std::vector<std::uint64_t> ListIdsOf(const std::vector<TypedId>& typed);

// Each typed id as a job id, from `rows` (a list of ListIdsOf, finished
// jobs included): A_I is its element's id ("no such job A_I" if none);
// with `expand_arrays`, an array's id is all its elements' ids, in order.
// Any other id stays as typed, for the daemon to answer for.
Result<std::vector<std::uint64_t>> ResolveTypedIds(const std::vector<TypedId>& typed,
                                                   const std::vector<protocol::JobRow>& rows,
                                                   bool expand_arrays);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_ARRAY_IDS_H_
