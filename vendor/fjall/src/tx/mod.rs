// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

pub mod keyspace;
pub mod partition;

#[allow(clippy::module_name_repetitions)]
pub mod read_tx;

#[allow(clippy::module_name_repetitions)]
pub mod write_tx;

#[cfg(feature = "ssi_tx")]
mod conflict_manager;

#[cfg(feature = "ssi_tx")]
mod oracle;

pub mod write;
