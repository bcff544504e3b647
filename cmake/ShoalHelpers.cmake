# Flags every shoal target shares: strict warnings, optional -Werror and
# sanitizers, and the public include directory.
function(shoal_target_defaults target)
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
                           -Wmissing-prototypes -Wpointer-arith -Wformat=2
                           -Wno-format-truncation)
    if(SHOAL_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
    if(SHOAL_SANITIZE)
      target_compile_options(${target} PRIVATE -fsanitize=${SHOAL_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
      target_link_options(${target} PRIVATE -fsanitize=${SHOAL_SANITIZE})
    endif()
  endif()
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endfunction()

# An executable built from the listed sources with shoal's flags.
function(shoal_executable name)
  add_executable(${name} ${ARGN})
  shoal_target_defaults(${name})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
endfunction()
