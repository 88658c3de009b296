# Publish: a catalog made into a static site, and the nightly job that regenerates and publishes it.
