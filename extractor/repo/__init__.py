# Repo: where source comes from: git/ (every git call of the package), release sdists from the package index,
# and the user cache directory that holds clones, releases and scans.
