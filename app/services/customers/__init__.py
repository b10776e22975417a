"""Customers: enrolment, the directory, phones and one-time codes."""
