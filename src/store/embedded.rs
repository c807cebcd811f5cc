//! Embedded control plane: one SQLite database under the home folder.
