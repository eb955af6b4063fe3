# Installing slapo as C++ libraries are used (docs/install.md): `cmake --install build --prefix P`
# puts slapo-tune in P/bin, the static libraries in P/lib, every header under P/include/slapo
# (included as "schedule/language/schedule.h", as in the tree), and a package config in
# P/lib/cmake/slapo, so that a project writes
#
#   find_package(slapo REQUIRED)
#   target_link_libraries(app PRIVATE slapo::schedule)   # or slapo::models, slapo::tuner, ...
#
# The libraries are static: their private dependencies (SQLite, toml++, nlohmann-json, Boost,
# Eigen, OpenMP, LibTorch) are found again by the config (slapoConfig.cmake.in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SLAPO_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/slapo)
set(slapo_libraries slapo_core slapo_space slapo_cost slapo_db slapo_runner_api slapo_tuner)
if(SLAPO_WITH_TORCH)
  list(APPEND slapo_libraries slapo_kernels slapo_schedule slapo_dist slapo_models slapo_runners
       slapo_cli)
endif()
foreach(lib IN LISTS slapo_libraries)
  string(REPLACE "slapo_" "" export_name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
endforeach()

install(TARGETS ${slapo_libraries} EXPORT slapoTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(SLAPO_WITH_TORCH)
  install(TARGETS slapo-tune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
foreach(dir core space cost db runners tuner schedule dist models cli)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/slapo
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/core/generated/core/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/slapo/core)
install(FILES ${PROJECT_SOURCE_DIR}/python/slapo_tune.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/slapo/python)

install(EXPORT slapoTargets NAMESPACE slapo:: DESTINATION ${SLAPO_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/slapoConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/slapoConfig.cmake
                              INSTALL_DESTINATION ${SLAPO_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/slapoConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/slapoConfig.cmake ${PROJECT_BINARY_DIR}/slapoConfigVersion.cmake
        DESTINATION ${SLAPO_INSTALL_CMAKEDIR})

# A Debian package of the same files: `cpack -G DEB --config build/CPackConfig.cmake`.
set(CPACK_PACKAGE_NAME slapo-dev)
set(CPACK_PACKAGE_VENDOR "slapo")
set(CPACK_PACKAGE_CONTACT "slapo maintainers <maintainers@users.noreply.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "schedules and an auto-tuner for large-model training on LibTorch (libraries, headers, slapo-tune)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libtorch-dev (>= 1.13), libgloo-dev, libsqlite3-dev, libboost-program-options-dev, libeigen3-dev, libtomlplusplus-dev, nlohmann-json3-dev")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
