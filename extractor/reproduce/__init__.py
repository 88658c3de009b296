# Reproduce: run the codebase itself (a runtime where it is installed) to raise its errors and check fixes.
