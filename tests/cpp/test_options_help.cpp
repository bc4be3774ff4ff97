// The help of every command: wrapped to the width, continuation lines under the help
// column, and no help string in src/ that lays itself out with hand-made breaks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/options.hpp"

using namespace mempath;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// What is wrong with one help text laid out for 80 columns: every line fits, and in the
// options block each line is an option ("  --name") or starts its text at the help column.
std::vector<std::string> layout_faults(const std::string& text, const std::string& where) {
  std::vector<std::string> faults;
  bool in_options = false;
  for (const std::string& line : lines_of(text)) {
    if (line.size() > 80) faults.push_back(where + ": over 80 columns: " + line);
    if (line == "options:") {
      in_options = true;
      continue;
    }
    if (!in_options || line.rfind("  --", 0) == 0) continue;
    const size_t text_start = line.find_first_not_of(' ');
    if (text_start != Options::kHelpColumn)
      faults.push_back(where + ": continuation not at column " + std::to_string(Options::kHelpColumn) + ": " + line);
  }
  if (!in_options) faults.push_back(where + ": no options block");
  return faults;
}

std::string run(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 4096> buffer{};
    while (size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
    ::pclose(pipe);
  }
  return out;
}

// The binaries of this build tree: the test runs from <build>/tests.
fs::path built(const std::string& name) { return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / name; }

// The command names a program's own --help lists (its registry), after "commands:".
std::vector<std::string> commands_of(const fs::path& program) {
  std::vector<std::string> names;
  bool listing = false;
  for (const std::string& line : lines_of(run("'" + program.string() + "' --help"))) {
    if (line == "commands:") listing = true;
    else if (listing && line.empty()) break;
    else if (listing && line.size() > 2 && line[2] != ' ')  // not a wrapped description's continuation
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return names;
}

}  // namespace

TEST(Wrap, BreaksAtSpacesWithAHangingIndent) {
  EXPECT_EQ(wrap("aaa bbb ccc ddd", 10, 2), "aaa bbb\n  ccc ddd");
  EXPECT_EQ(wrap("aaa  bbb\nccc", 80, 4), "aaa bbb\n    ccc");  // spaces collapse, newline kept
  EXPECT_EQ(wrap("aaa bbb", 10, 4, 4), "aaa\n    bbb");         // the first line starts at column 4
}

TEST(Wrap, AWordLongerThanTheLineStandsAlone) {
  EXPECT_EQ(wrap("a 0123456789abc b", 10, 0), "a\n0123456789abc\nb");
}

TEST(HelpText, LongHelpWrapsUnderTheHelpColumn) {
  const std::string sentence = "a help sentence long enough that it has to continue on the next lines, ";
  Options o("bw", "one summary", {{"size", "SIZE", sentence + sentence + sentence},
                                  {"a-very-long-option-name", "VALUE", "help below the name"}});
  const std::string text = o.help_text(80);
  EXPECT_TRUE(layout_faults(text, "bw").empty()) << text;
  const std::string size_head = "  --size SIZE";
  EXPECT_NE(text.find(size_head + std::string(Options::kHelpColumn - size_head.size(), ' ') + "a help sentence"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  --a-very-long-option-name VALUE\n" + std::string(Options::kHelpColumn, ' ') +
                      "help below the name\n"),
            std::string::npos)
      << text;
  // The same words, only laid out: nothing dropped by the wrapping.
  std::string words;
  for (const std::string& line : lines_of(text))
    if (line.rfind("  --size", 0) == 0 || line.rfind(std::string(Options::kHelpColumn, ' '), 0) == 0)
      words += line.substr(Options::kHelpColumn) + " ";
  EXPECT_NE(words.find(sentence + sentence + sentence), std::string::npos) << words;
}

TEST(HelpText, AWiderTerminalGetsLongerLines) {
  const std::string help(30, 'x');
  Options o("bw", "", {{"size", "SIZE", help + " " + help + " " + help}});
  EXPECT_EQ(lines_of(o.help_text(80)).size(), lines_of(o.help_text(200)).size() + 2);
}

TEST(HelpText, EveryCommandOfEveryProgramFitsAndAligns) {
  int checked = 0;
  for (const std::string program : {"mempath", "mempath-mpi"}) {
    const fs::path binary = built(program);
    if (program == std::string("mempath")) ASSERT_TRUE(fs::exists(binary)) << binary;
    if (!fs::exists(binary)) continue;  // mempath-mpi is built only where MPI is found
    const std::vector<std::string> commands = commands_of(binary);
    ASSERT_FALSE(commands.empty()) << program << " --help lists no command";
    for (const std::string& line : lines_of(run("env -u COLUMNS '" + binary.string() + "' --help 2>&1")))
      EXPECT_LE(line.size(), 80u) << program << " --help: over 80 columns: " << line;
    for (const std::string& command : commands) {
      if (command == "version") continue;  // takes no options
      const std::string text = run("env -u COLUMNS '" + binary.string() + "' " + command + " --help 2>&1");
      if (text.find("build has no") != std::string::npos) continue;  // e.g. nccl without NCCL
      for (const std::string& fault : layout_faults(text, std::string(program) + " " + command)) ADD_FAILURE() << fault;
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

TEST(HelpText, NoHelpStringInTheSourcesCarriesAHandMadeBreak) {
  // "...\n"  "          more" or "...\n          more": the layout belongs to help_text.
  const std::regex hand_made(R"(\\n"\s*"\s{8,}|\\n {8,})");
  int scanned = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(MEMPATH_SOURCE_ROOT) / "src")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".cu") continue;
    std::ifstream in(entry.path());
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++scanned;
    std::smatch m;
    if (std::regex_search(source, m, hand_made))
      ADD_FAILURE() << entry.path() << ": a hand-made line break in a string: " << m.str();
  }
  EXPECT_GT(scanned, 20);
}
