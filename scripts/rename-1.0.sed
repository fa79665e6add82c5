# SPDX-License-Identifier: Apache-2.0
# rename-1.0.sed - the mechanical part of libzklock's 1.0 API (issue 25,
# docs/api-1.0.md section 2). GNU sed; idempotent (running it twice changes
# nothing more). Longest names first. For an application's sources:
#   sed -i -f rename-1.0.sed $(grep -rlI zkl_ src/)
# (never over this file itself: its patterns are the old names). This tree
# was moved with it, leaving the history and the design alone (NEWS,
# debian/changelog, docs/api-1.0.md) and, since then, this file.
# What it cannot do (see docs/api-1.0.md section 3 and R3): zkl_session_open's
# new signature (zkl_session_options), zkl_session_open2/open3/wrap (removed),
# zkl_break_cb's new argument order (s, rc, node, arg), the named enum types
# in callbacks (zkl_state, zkl_lost_reason, zkl_acl, zkl_event_type),
# ZKL_EBACKGROUND (removed: check zkl_close_outcome instead), and any other
# use of what zkl_session_close() returned (it is ZKL_OK now).
# In tests/, the old opens have helpers (tests/zktest.h); this perl line
# moved this tree's tests (nested parentheses in the arguments included):
#   perl -0pi -e 's/\bzkl_session_open3\(/zkt_open(/g;
#     s/\bzkl_session_open2(\(((?:[^()]++|(?1))*)\))/"zkt_open(".substr($1,1,-1).", 0)"/ge;
#     s/\bzkl_session_open(\(((?:[^()]++|(?1))*)\))/"zkt_open(".substr($1,1,-1).", 0, 0)"/ge;
#     s/\bzkl_session_wrap\(/zkt_wrap(/g' tests/test_*.c
# (run it once, before anything writes the new zkl_session_open(out, &o)).

# functions (2a)
s/\bzkl_session_forward_event\b/zkl_session_forward_watcher_event/g
s/\bzkl_session_servers\b/zkl_session_get_servers/g
s/\bzkl_set_log_handler\b/zkl_on_log/g
s/\bzkl_lock_node_paths\b/zkl_lock_get_node_paths/g
s/\bzkl_lock_node_path\b/zkl_lock_get_node_path/g
s/\bzkl_lock_multi_async\b/zkl_lock_commit_async/g
s/\bzkl_lock_multi\b/zkl_lock_commit/g
s/\bzkl_multilock_refused_name\b/zkl_lock_refused_name/g
s/\bzkl_multilock_new\b/zkl_lock_new_multi/g
s/\bzkl_semaphore_new\b/zkl_lock_new_semaphore/g
s/\bzkl_election_new\b/zkl_lock_new_election/g
s/\bzkl_leader_get\b/zkl_name_get_leader/g
s/\bzkl_participants_free\b/zkl_name_list_free/g
s/\bzkl_participants\b/zkl_name_list/g
s/\bzkl_lock_names_free\b/zkl_name_find_free/g
s/\bzkl_lock_names\b/zkl_name_find/g
s/\bzkl_revoke\b/zkl_name_revoke/g
s/\bzkl_break\b/zkl_name_break/g

# typedefs (2b)
s/\bzkl_session_state_cb\b/zkl_state_cb/g
s/\bzkl_log_fn\b/zkl_log_cb/g
s/\bzkl_multi_cb\b/zkl_commit_cb/g

# macros (2d)
s/\bZKL_MULTI_MAX\b/ZKL_COMMIT_OPS_MAX/g

# Tests that asserted what the close returned now assert its outcome
# (tests/zktest.h: zkt_close_how() asserts ZKL_OK and returns *how). These
# come before the general rule below, which would leave such an assert
# comparing ZKL_OK with the old code.
s/CU_ASSERT_EQUAL(zkl_session_close(\([A-Za-z_&*][^(),]*\)), ZKL_OK)/CU_ASSERT_EQUAL(zkt_close_how(\1), ZKL_CLOSE_DONE)/g
s/CU_ASSERT_EQUAL(zkl_session_close(\([A-Za-z_&*][^(),]*\)), ZKL_ECONNECT)/CU_ASSERT_EQUAL(zkt_close_how(\1), ZKL_CLOSE_UNREACHED)/g
s/CU_ASSERT_EQUAL(zkl_session_close(\([A-Za-z_&*][^(),]*\)), ZKL_EEXPIRED)/CU_ASSERT_EQUAL(zkt_close_how(\1), ZKL_CLOSE_EXPIRED)/g
s/CU_ASSERT_EQUAL(zkl_session_close(\([A-Za-z_&*][^(),]*\)), ZKL_EBACKGROUND)/CU_ASSERT_EQUAL(zkt_close_how(\1), ZKL_CLOSE_BACKGROUND)/g

# zkl_session_close(s) -> zkl_session_close(s, NULL) (R3): calls with one
# argument only (not "(3)" of a man page reference, not the declaration,
# not a call already moved).
/zkl_session_close(zkl_session \*/!s/\bzkl_session_close(\([A-Za-z_&*][^(),]*\))/zkl_session_close(\1, NULL)/g
