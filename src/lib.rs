pub mod diag;
pub mod expr;
pub mod load;
pub mod model;
pub mod time;
