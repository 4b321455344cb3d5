//! What the integration tests share: where the test models and fixtures are ([`models`]),
//! GPU contexts, engines, inputs and buffers ([`gpu`]), and comparisons of results with their
//! references ([`compare`]), and the transformers reference of the tiny fixtures
//! ([`transformers`]). A test file takes it with `mod support;`.

// Every test binary compiles this module on its own and uses a part of it: what one binary
// leaves unused, another uses.
#![allow(dead_code)]

pub mod compare;
pub mod gpu;
pub mod models;
pub mod transformers;
