//! The one integration-test binary: it runs the built `portcullis` binary and in-process
//! servers on port 0. Each module covers one area; regression tests are named after their
//! issue (`issue_N_...`).

mod acct;
mod apply;
mod audit;
mod client_auth;
mod container;
mod crash;
mod crash_acct;
mod dashboards;
mod doctor;
mod eap;
mod eap_reload;
mod eap_support;
mod formats_cli;
mod hash_cli;
mod hostile;
mod lab;
mod lab_eap;
mod nas_cli;
mod package;
mod process_support;
mod radius;
mod radius_interop;
mod radius_support;
mod registration;
mod reload;
mod scale_out;
mod scale_out_haproxy;
mod server;
mod server_interop;
mod server_malformed;
mod server_support;
mod service;
mod status_page;
mod store_cli;
mod tls_cli;
