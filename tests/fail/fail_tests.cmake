# must-not-compile tests: fusor_fail_test(<file> <regex>)
