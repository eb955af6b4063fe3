// The unit that builds the shared precompiled header (cmake/torch_pch.cmake); it has no code.
