# Writes build_info.hpp at every build (cmake -P), so results name the revision that was
# compiled, not the one CMake was configured at. configure_file leaves an unchanged file
# alone: nothing recompiles unless the revision moved.
#   -DSRC_DIR -DTEMPLATE -DOUTPUT -DFIXED_REVISION -DPROJECT_VERSION -DCMAKE_BUILD_TYPE
#   -DCMAKE_CXX_COMPILER_ID -DCMAKE_CXX_COMPILER_VERSION
set(MEMPATH_GIT_REVISION "${FIXED_REVISION}")
if(NOT MEMPATH_GIT_REVISION)
  execute_process(COMMAND git describe --always --dirty WORKING_DIRECTORY ${SRC_DIR}
                  OUTPUT_VARIABLE MEMPATH_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT MEMPATH_GIT_REVISION)
  set(MEMPATH_GIT_REVISION unknown)
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
