# The installable library: libsgfabric.so and libsgfabric.a, the fabric core, the SimGrid glue and
# both plugins (docs/library.md). Its sources are those of the in-tree static libraries, compiled
# again as position-independent code: the sgfabric executable keeps its own non-PIC objects and
# its allocator (tools/small_alloc.cpp), which a library must not impose on its host program.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SGF_LIBRARY_PARTS sgf_cli sgf_units sgf_platforms sgf_fabric sgf_simgrid sgf_ib sgf_roce sgf_ib_sg sgf_roce_sg)
set(SGF_LIBRARY_SOURCES "")
foreach(part ${SGF_LIBRARY_PARTS})
  get_target_property(dir ${part} SOURCE_DIR)
  get_target_property(srcs ${part} SOURCES)
  foreach(src ${srcs})
    if(IS_ABSOLUTE ${src})
      list(APPEND SGF_LIBRARY_SOURCES ${src})
    else()
      list(APPEND SGF_LIBRARY_SOURCES ${dir}/${src})
    endif()
  endforeach()
endforeach()

set(SGF_PUBLIC_HEADERS
  plugins/fabric/sgfabric.h plugins/fabric/sg_fabric.h plugins/fabric/fabric.h plugins/fabric/heap.h
  plugins/fabric/param.h plugins/fabric/rng.h plugins/fabric/route.h plugins/fabric/topo.h
  plugins/fabric/units.h plugins/ib/ib.h plugins/roce/roce.h)
set(SGF_PRIVATE_INCLUDES
  ${PROJECT_SOURCE_DIR}/plugins/fabric ${PROJECT_SOURCE_DIR}/plugins/ib ${PROJECT_SOURCE_DIR}/plugins/roce
  ${PROJECT_SOURCE_DIR}/platforms ${PROJECT_SOURCE_DIR}/tools/cli ${PROJECT_BINARY_DIR}/generated)

foreach(kind SHARED STATIC)
  string(TOLOWER ${kind} lower)
  set(target sgfabric_${lower})
  add_library(${target} ${kind} ${SGF_LIBRARY_SOURCES})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME sgfabric POSITION_INDEPENDENT_CODE ON
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR} EXPORT_NAME ${lower})
  target_include_directories(${target} PRIVATE ${SGF_PRIVATE_INCLUDES}
    INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/sgfabric>)
  target_link_libraries(${target} PUBLIC PkgConfig::SIMGRID PkgConfig::LIBXML2 ${MATH_LIBRARY})
endforeach()
# Only the installed headers' symbols leave the shared library (sgfabric.map).
target_link_options(sgfabric_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/sgfabric.map)
set_target_properties(sgfabric_shared PROPERTIES LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/sgfabric.map)
# The SimGrid glue is C++: a C program linking the static library needs the C++ runtime.
target_link_libraries(sgfabric_static PUBLIC stdc++)

install(TARGETS sgfabric_shared sgfabric_static EXPORT sgfabricTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${SGF_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sgfabric)
install(TARGETS sgfabric RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The scripts compare and sweep run (charts, report.html, the Snakemake workflow), found by the
# installed sgfabric next to itself (tools/run_common.c, run_analysis_dir).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/analysis/ DESTINATION ${CMAKE_INSTALL_DATADIR}/sgfabric/analysis
  USE_SOURCE_PERMISSIONS PATTERN "__pycache__" EXCLUDE)

# CMake package: find_package(sgfabric) gives sgfabric::shared and sgfabric::static.
install(EXPORT sgfabricTargets NAMESPACE sgfabric:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sgfabric)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sgfabricConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sgfabricConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sgfabric)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sgfabricConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sgfabricConfig.cmake ${PROJECT_BINARY_DIR}/sgfabricConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sgfabric)

# pkg-config: `pkg-config --cflags --libs sgfabric` (add --static for libsgfabric.a).
file(RELATIVE_PATH SGF_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/sgfabric.pc.in ${PROJECT_BINARY_DIR}/sgfabric.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sgfabric.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
