# Git: every git call of the package: run, clone (a local repository or a URL's cached clone), commit (a revision
# resolved once), blobs (a commit's files listed and read), history (tags, logs, ancestry), write (the release
# repository: init, refs, config, repack, fast-import).
