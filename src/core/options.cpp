#include "core/options.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mempath {

namespace {
std::string g_program = "mempath";
}

void Options::set_program(const std::string& name) { g_program = name; }

Options::Options(std::string command, std::string summary, std::vector<OptionSpec> specs)
    : command_(std::move(command)), summary_(std::move(summary)), specs_(std::move(specs)) {
  specs_.push_back({"help", "", "show this help and exit"});
}

const OptionSpec* Options::find(const std::string& name) const {
  for (const auto& spec : specs_)
    if (spec.name == name) return &spec;
  return nullptr;
}

bool Options::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h") {
      values_["help"] = "1";
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      throw UsageError("unexpected argument '" + arg + "' to '" + g_program + " " + command_ +
                       "'; options start with --, see '" + g_program + " " + command_ + " --help'");
    std::string name = arg.substr(2), value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* spec = find(name);
    if (!spec) {
      std::vector<std::string> names;
      for (const auto& s : specs_) names.push_back("--" + s.name);
      throw UsageError("unknown option --" + name + " for '" + g_program + " " + command_ +
                       "'; valid: " + join(names));
    }
    if (spec->value_name.empty()) {
      if (inline_value) throw UsageError("option --" + name + " takes no value");
      value = "1";
    } else if (!inline_value) {
      if (i + 1 >= args.size())
        throw UsageError("option --" + name + " needs a value (" + spec->value_name + ")");
      value = args[++i];
    }
    if (!spec->value_name.empty() && value.empty())
      throw UsageError("option --" + name + " is empty; give a value (" + spec->value_name + ")");
    values_[name] = value;
  }
  if (flag("help")) {
    std::cout << help_text();
    return false;
  }
  return true;
}

bool Options::flag(const std::string& name) const { return values_.count(name) > 0; }
bool Options::has(const std::string& name) const { return values_.count(name) > 0; }

std::optional<std::string> Options::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Options::get_or(const std::string& name, const std::string& fallback) const {
  auto v = get(name);
  return v ? *v : fallback;
}

std::string Options::choice(const std::string& name, const std::vector<std::string>& valid,
                            const std::string& fallback) const {
  const std::string value = get_or(name, fallback);
  for (const auto& v : valid)
    if (v == value) return value;
  throw UsageError("invalid --" + name + " '" + value + "'; valid: " + join(valid));
}

long long Options::integer(const std::string& name, long long fallback, long long min_value,
                           long long max_value) const {
  auto v = get(name);
  if (!v) return fallback;
  const auto value = whole_number(*v);
  // "-0" is no count either: where negatives are out of range, a sign is refused.
  if (!value || *value < min_value || *value > max_value || (min_value >= 0 && (*v)[0] == '-'))
    throw UsageError("invalid --" + name + " '" + *v + "'; valid: a whole number from " + std::to_string(min_value) +
                     " to " + std::to_string(max_value) + " (digits only, no spaces)");
  return *value;
}

std::vector<std::string> Options::list(const std::string& name) const {
  auto v = get(name);
  if (!v) return {};
  const std::vector<std::string> items = split_list(*v);
  if (items.empty())
    throw UsageError("--" + name + " '" + *v + "' names nothing; give a comma list of names");
  std::vector<std::string> once;
  for (const auto& item : items)
    if (std::find(once.begin(), once.end(), item) == once.end()) once.push_back(item);
  note_duplicates(name, items, once);
  return once;
}

std::vector<uint64_t> Options::sizes(const std::string& name) const {
  std::vector<uint64_t> once;
  const std::vector<std::string> items = split_list(get_or(name, ""));
  if (has(name) && items.empty())
    throw UsageError("--" + name + " '" + *get(name) + "' names nothing; give a size or a comma list of sizes");
  std::vector<std::string> first;
  // "4KiB,4096" name one size twice although the words differ.
  for (const auto& item : items) {
    const uint64_t bytes = parse_size(item);
    if (std::find(once.begin(), once.end(), bytes) == once.end()) once.push_back(bytes), first.push_back(item);
  }
  note_duplicates(name, items, first, [](const std::string& item) { return std::to_string(parse_size(item)); });
  return once;
}

void Options::note_duplicates(const std::string& name, const std::vector<std::string>& items,
                              const std::vector<std::string>& kept,
                              const std::function<std::string(const std::string&)>& key_of) const {
  if (items.size() == kept.size() || !noted_.insert(name).second) return;
  auto key = [&](const std::string& item) { return key_of ? key_of(item) : item; };
  // Said once per option (a command may read a list twice), naming each value as first given.
  std::vector<std::string> parts;
  for (const auto& k : kept) {
    size_t times = 0;
    for (const auto& item : items) times += key(item) == key(k);
    if (times > 1) parts.push_back(k + " given " + (times == 2 ? std::string("twice") : std::to_string(times) + " times"));
  }
  std::cerr << g_program << ": note: --" << name << " " << join(parts) << "; measured once" << std::endl;
}

size_t Options::help_width() {
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long value = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && value > 0) return static_cast<size_t>(value);
  }
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

std::string Options::help_text(size_t width) const {
  // Below this the help column would hold a word or two per line: wider lines read better.
  width = std::max(width, kHelpColumn + 32);
  std::ostringstream out;
  out << "usage: " << g_program << " " << command_ << " [options]\n" << wrap(summary_, width, 0)
      << "\n\noptions:\n";
  for (const auto& spec : specs_) {
    std::string left = "  --" + spec.name + (spec.value_name.empty() ? "" : " " + spec.value_name);
    if (left.size() < kHelpColumn) left.resize(kHelpColumn, ' ');
    else left += "\n" + std::string(kHelpColumn, ' ');
    out << left << wrap(spec.help, width, kHelpColumn, kHelpColumn) << "\n";
  }
  return out.str();
}

std::string wrap(const std::string& text, size_t width, size_t indent, size_t first_column) {
  std::string out;
  size_t column = first_column;
  bool line_empty = true;
  auto new_line = [&] {
    out += "\n" + std::string(indent, ' ');
    column = indent;
    line_empty = true;
  };
  std::istringstream lines(text);
  std::string line;
  for (bool first = true; std::getline(lines, line); first = false) {
    if (!first) new_line();
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (!line_empty && column + 1 + word.size() > width) new_line();
      if (!line_empty) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      line_empty = false;
    }
  }
  return out;
}

int thread_count(const std::string& text) {
  const long long t = parse_int(text, "--threads");
  if (t < 1 || t > 65536)
    throw UsageError("invalid --threads '" + text + "'; valid: a number of threads from 1 to 65536");
  return static_cast<int>(t);
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep))
    if (!item.empty()) items.push_back(item);
  return items;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace mempath
