//! Load lab: drives an OAuth 2.0 token endpoint from scenario files and reports what
//! legitimate and attacking clients experienced, without coordinated omission.
