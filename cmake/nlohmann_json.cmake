# nlohmann/json, the JSON parser of the core (header-only, used only inside csrc/core/base/json.cc).
#
# Nothing is downloaded at configure time. It is found, in order:
#   1. an installed CMake package (Debian's nlohmann-json3-dev, a vcpkg/conda install), or
#   2. the PyPI package 'nlohmann-json' (a build requirement in pyproject.toml, so pip's build
#      environment has it; scripts/setup.sh installs it for the CTest build), located by asking
#      the Python interpreter where its headers are.
find_package(nlohmann_json 3.10 CONFIG QUIET)
if(NOT nlohmann_json_FOUND)
  if(NOT Python_EXECUTABLE)
    find_package(Python 3.10 REQUIRED COMPONENTS Interpreter)
  endif()
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c "import nlohmann_json; print(nlohmann_json.get_include())"
    OUTPUT_VARIABLE _nlohmann_include RESULT_VARIABLE _nlohmann_rc ERROR_QUIET
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _nlohmann_rc EQUAL 0 OR NOT EXISTS "${_nlohmann_include}/nlohmann/json.hpp")
    message(FATAL_ERROR "nlohmann/json not found: 'pip install nlohmann-json' (or apt-get install "
                        "nlohmann-json3-dev), then configure again")
  endif()
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE "${_nlohmann_include}")
  message(STATUS "vllm_mem: nlohmann/json from the Python package at ${_nlohmann_include}")
endif()
