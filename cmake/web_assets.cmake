# The chat page served at / (issue 16): src/server/web/ plus the Markdown, sanitiser and
# highlighting libraries from Debian packages, embedded into edge_server so `serve` needs
# no files at run time and no network. Each asset is embedded twice, as is and gzipped
# (gzip -9 -n at build time, so no request pays for compression); the generated .cpp pulls
# the bytes in with the assembler's .incbin and carries each file's SHA-256, which is also
# the asset's ETag (a changed file changes the .cpp, so nothing stale survives ccache).
# Entries: "URL path|content type|file". Included from CMakeLists.txt when edge_server exists.
set(EDGE_WEB_DIR ${CMAKE_SOURCE_DIR}/src/server/web)
set(EDGE_WEB_ASSETS
  "/|text/html|${EDGE_WEB_DIR}/index.html"
  "/assets/app.css|text/css|${EDGE_WEB_DIR}/app.css"
  "/assets/app.js|text/javascript|${EDGE_WEB_DIR}/app.js"
  "/assets/chat.js|text/javascript|${EDGE_WEB_DIR}/chat.js"
  "/assets/media.js|text/javascript|${EDGE_WEB_DIR}/media.js"
  "/assets/status.js|text/javascript|${EDGE_WEB_DIR}/status.js"
  "/assets/marked.min.js|text/javascript|/usr/share/javascript/marked/marked.min.js"
  "/assets/purify.min.js|text/javascript|/usr/share/nodejs/dompurify/dist/purify.min.js"
  "/assets/highlight.min.js|text/javascript|/usr/share/javascript/highlight.js/highlight.min.js"
  "/assets/highlight.css|text/css|/usr/share/javascript/highlight.js/styles/github.css")
# Which Debian package provides a file outside the source tree (for the error message).
set(EDGE_WEB_PACKAGE_marked libjs-marked)
set(EDGE_WEB_PACKAGE_dompurify node-dompurify)
set(EDGE_WEB_PACKAGE_highlight.js libjs-highlight.js)

find_program(EDGE_GZIP gzip)
if(NOT EDGE_GZIP)
  message(FATAL_ERROR "the chat page's assets are gzipped at build time: install gzip")
endif()
set(web_files "")
foreach(entry ${EDGE_WEB_ASSETS})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 2 file)
  if(NOT EXISTS "${file}")
    set(pkg "")
    foreach(name marked dompurify highlight.js)
      if(file MATCHES "/${name}/")
        set(pkg " (Debian package ${EDGE_WEB_PACKAGE_${name}}; scripts/install-deps.sh installs it)")
      endif()
    endforeach()
    message(FATAL_ERROR "chat page asset missing: ${file}${pkg}")
  endif()
  list(APPEND web_files "${file}")
endforeach()

set(web_out ${CMAKE_BINARY_DIR}/generated/web)
string(REPLACE ";" "^^" web_assets_arg "${EDGE_WEB_ASSETS}")  # a list cannot cross -D
add_custom_command(
  OUTPUT ${web_out}/web_assets_data.cpp
  COMMAND ${CMAKE_COMMAND} "-DASSETS=${web_assets_arg}" -DOUT=${web_out} -DGZIP=${EDGE_GZIP}
          -P ${CMAKE_SOURCE_DIR}/cmake/gen_web_assets.cmake
  DEPENDS ${web_files} ${CMAKE_SOURCE_DIR}/cmake/gen_web_assets.cmake ${CMAKE_SOURCE_DIR}/cmake/web_assets.cmake
  COMMENT "Embedding the chat page (${CMAKE_SOURCE_DIR}/src/server/web) and its libraries"
  VERBATIM)
target_sources(edge_server PRIVATE ${web_out}/web_assets_data.cpp)
