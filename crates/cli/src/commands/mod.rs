pub mod chat;
pub mod devices;
pub mod model_loading;
pub mod models;
pub mod perplexity;
pub mod run;
pub mod sampling_args;
pub mod tokenize;
