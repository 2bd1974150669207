"""The crowd side of a study: platforms (Prolific, MTurk), participants' data, pay and budget, qualification and quality."""
