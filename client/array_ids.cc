#include "client/array_ids.h"

#include <algorithm>
#include <cctype>

#include "client/command_line.h"

namespace hpcb::client {

Result<TypedId> ParseTypedId(const std::string& word) {
  const std::size_t underscore = word.find('_');
  Result<std::uint64_t> id = ParseJobId(word.substr(0, underscore));
  const std::string index =
      underscore == std::string::npos ? std::string() : word.substr(underscore + 1);
  const bool digits =
      !index.empty() && index.size() <= 6 &&
      std::all_of(index.begin(), index.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!id || (underscore != std::string::npos && !digits)) {
    return InvalidArgument("argument ID: invalid job id: '" + word.substr(0, 40) + "'");
  }
  if (underscore == std::string::npos) return TypedId{*id, std::nullopt};
  return TypedId{*id, static_cast<std::uint32_t>(std::stoul(index))};
}

std::string TypedIdText(const TypedId& id) {
  std::string text = std::to_string(id.id);
  if (id.index) text += "_" + std::to_string(*id.index);
  return text;
}

Result<std::vector<TypedId>> ParseTypedIdList(const std::string& text, const char* flag) {
  std::vector<TypedId> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string word = text.substr(start, comma - start);
    Result<TypedId> id = ParseTypedId(word);
    if (!id) {
      return InvalidArgument(std::string("argument ") + flag + ": '" + word.substr(0, 40) +
                             "' is not a job id (expected ID[,ID...])");
    }
    ids.push_back(*id);
    start = comma + 1;
  }
  return ids;
}

std::vector<std::uint64_t> ListIdsOf(const std::vector<TypedId>& typed) {
  std::vector<std::uint64_t> ids;
  for (const TypedId& one : typed) {
    if (std::find(ids.begin(), ids.end(), one.id) == ids.end()) ids.push_back(one.id);
  }
  return ids;
}

Result<std::vector<std::uint64_t>> ResolveTypedIds(const std::vector<TypedId>& typed,
                                                   const std::vector<protocol::JobRow>& rows,
                                                   bool expand_arrays) {
  std::vector<std::uint64_t> ids;
  for (const TypedId& one : typed) {
    const bool is_job = std::any_of(rows.begin(), rows.end(),
                                    [&](const protocol::JobRow& row) { return row.id == one.id; });
    std::vector<std::uint64_t> found;
    for (const protocol::JobRow& row : rows) {
      if (is_job || row.array_id != one.id) continue;
      if (!one.index || row.array_index == one.index) found.push_back(row.id);
    }
    if (one.index && found.empty()) {
      return Error(ErrorCode::kNotFound, "no such job " + TypedIdText(one));
    }
    if (one.index || (expand_arrays && !found.empty())) {
      ids.insert(ids.end(), found.begin(), found.end());
    } else {
      ids.push_back(one.id);
    }
  }
  return ids;
}

}  // namespace hpcb::client
