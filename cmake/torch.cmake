# Optional PyTorch allocator provider (csrc/torch).
#
# We do not call find_package(Torch): with a CUDA wheel it insists on a CUDA toolkit, which CPU
# CI and many GPU hosts lack. The provider needs only c10's device-generic allocator interface,
# so we ask the running interpreter where torch lives and link libc10 alone. The torch used is
# always the installed one (build with --no-build-isolation), because the C++ ABI must match.
set(VLLM_MEM_TORCH_FOUND OFF)
if(NOT VLLM_MEM_WITH_TORCH STREQUAL "OFF")
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c
      "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)"
    OUTPUT_VARIABLE _torch_info RESULT_VARIABLE _torch_rc ERROR_QUIET
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_torch_rc EQUAL 0)
    string(REPLACE "\n" ";" _torch_info "${_torch_info}")
    list(GET _torch_info 0 VLLM_MEM_TORCH_DIR)
    list(GET _torch_info 1 VLLM_MEM_TORCH_CXX11_ABI)
    list(GET _torch_info 2 VLLM_MEM_TORCH_VERSION)
    set(VLLM_MEM_TORCH_FOUND ON)
  elseif(VLLM_MEM_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "VLLM_MEM_WITH_TORCH=ON but '${Python_EXECUTABLE}' cannot import torch")
  endif()
endif()

file(GLOB VLLM_MEM_TORCH_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/csrc/torch/*.cc)
if(VLLM_MEM_TORCH_FOUND AND VLLM_MEM_TORCH_SOURCES)
  message(STATUS "vllm_mem: building the torch allocator provider against torch "
                 "${VLLM_MEM_TORCH_VERSION} at ${VLLM_MEM_TORCH_DIR}")
  # A separate shared library: _C must import without torch, so it dlopens this provider only
  # when torch is already loaded in the process.
  add_library(vllm_mem_torch_provider MODULE ${VLLM_MEM_TORCH_SOURCES})
  target_include_directories(vllm_mem_torch_provider SYSTEM PRIVATE ${VLLM_MEM_TORCH_DIR}/include)
  target_include_directories(vllm_mem_torch_provider PRIVATE ${PROJECT_SOURCE_DIR}/csrc
                             ${PROJECT_SOURCE_DIR}/csrc/core/include)
  # The torch this provider is built against, checked by _C before it trusts the provider.
  target_compile_definitions(vllm_mem_torch_provider PRIVATE
                             _GLIBCXX_USE_CXX11_ABI=${VLLM_MEM_TORCH_CXX11_ABI}
                             VLLM_MEM_TORCH_BUILT_VERSION="${VLLM_MEM_TORCH_VERSION}"
                             VLLM_MEM_TORCH_BUILT_LIB_DIR="${VLLM_MEM_TORCH_DIR}/lib")
  target_link_libraries(vllm_mem_torch_provider PRIVATE ${VLLM_MEM_TORCH_DIR}/lib/libc10.so)
  target_compile_options(vllm_mem_torch_provider PRIVATE ${VLLM_MEM_WARNINGS})
  # Find libc10 where torch keeps it, whichever venv the wheel is installed in.
  set_target_properties(vllm_mem_torch_provider PROPERTIES
                        PREFIX "" OUTPUT_NAME "_torch_provider"
                        INSTALL_RPATH "$ORIGIN/../torch/lib" BUILD_RPATH "${VLLM_MEM_TORCH_DIR}/lib")
  vllm_mem_hide_symbols(vllm_mem_torch_provider ${PROJECT_SOURCE_DIR}/csrc/torch/torch_provider.map)
  install(TARGETS vllm_mem_torch_provider LIBRARY DESTINATION vllm_mem)
else()
  message(STATUS "vllm_mem: torch not found or disabled; allocator stats will report 'unavailable'")
endif()
