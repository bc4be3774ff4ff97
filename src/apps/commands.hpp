#pragma once
#include <string>
#include <vector>

namespace mempath {

// Each subcommand takes the arguments after its name and returns the exit code; bad
// input is thrown as UsageError and reported by main.
int cmd_topo(const std::vector<std::string>& args);
int cmd_list(const std::vector<std::string>& args);
int cmd_bw(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_memcpy(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_allocmatrix(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_um(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_chase(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_pingpong(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_gemm(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_stream(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace mempath
