--
-- PostgreSQL database dump
--

\restrict WilbMnrXvD8JXmtEXBKOkBc45cTcoOVUYwSxBhROx9fZPsB5pIJvazNWWjMu7g7

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: agentkit_v1_fixture; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA agentkit_v1_fixture;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: agentkit_events; Type: TABLE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE TABLE agentkit_v1_fixture.agentkit_events (
    run_id text NOT NULL,
    pos bigint NOT NULL,
    data text NOT NULL
);


--
-- Name: agentkit_runs; Type: TABLE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE TABLE agentkit_v1_fixture.agentkit_runs (
    seq bigint NOT NULL,
    id text NOT NULL,
    session_id text NOT NULL,
    agent_id text NOT NULL,
    status text NOT NULL,
    created_at double precision NOT NULL,
    finished_at double precision
);


--
-- Name: agentkit_runs_seq_seq; Type: SEQUENCE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE SEQUENCE agentkit_v1_fixture.agentkit_runs_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: agentkit_runs_seq_seq; Type: SEQUENCE OWNED BY; Schema: agentkit_v1_fixture; Owner: -
--

ALTER SEQUENCE agentkit_v1_fixture.agentkit_runs_seq_seq OWNED BY agentkit_v1_fixture.agentkit_runs.seq;


--
-- Name: agentkit_schema_version; Type: TABLE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE TABLE agentkit_v1_fixture.agentkit_schema_version (
    version integer NOT NULL
);


--
-- Name: agentkit_sessions; Type: TABLE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE TABLE agentkit_v1_fixture.agentkit_sessions (
    seq bigint NOT NULL,
    id text NOT NULL,
    agent_id text NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    metadata text NOT NULL
);


--
-- Name: agentkit_sessions_seq_seq; Type: SEQUENCE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE SEQUENCE agentkit_v1_fixture.agentkit_sessions_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: agentkit_sessions_seq_seq; Type: SEQUENCE OWNED BY; Schema: agentkit_v1_fixture; Owner: -
--

ALTER SEQUENCE agentkit_v1_fixture.agentkit_sessions_seq_seq OWNED BY agentkit_v1_fixture.agentkit_sessions.seq;


--
-- Name: agentkit_transcript; Type: TABLE; Schema: agentkit_v1_fixture; Owner: -
--

CREATE TABLE agentkit_v1_fixture.agentkit_transcript (
    session_id text NOT NULL,
    pos integer NOT NULL,
    data text NOT NULL
);


--
-- Name: agentkit_runs seq; Type: DEFAULT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_runs ALTER COLUMN seq SET DEFAULT nextval('agentkit_v1_fixture.agentkit_runs_seq_seq'::regclass);


--
-- Name: agentkit_sessions seq; Type: DEFAULT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_sessions ALTER COLUMN seq SET DEFAULT nextval('agentkit_v1_fixture.agentkit_sessions_seq_seq'::regclass);


--
-- Data for Name: agentkit_events; Type: TABLE DATA; Schema: agentkit_v1_fixture; Owner: -
--

INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('1558c2b632b46bfd155b77814b8d16e2', 0, '{"type":"turn_start","turnId":"1b88c4bed2277c0db9123088c45f1584","sessionId":"117cd0b4-9b55-4ccd-8832-a30dff6176bd","userPrompt":"Say hello"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('1558c2b632b46bfd155b77814b8d16e2', 1, '{"type":"session_init","sessionId":"117cd0b4-9b55-4ccd-8832-a30dff6176bd","systemPrompt":"You are a fixture.","projectPath":"/work/main/tests/data/store_v1"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('1558c2b632b46bfd155b77814b8d16e2', 3, '{"type":"text","content":"Hello from the fixture.","turnPhase":"final"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('1558c2b632b46bfd155b77814b8d16e2', 4, '{"type":"result","content":"Hello from the fixture.","accounting":{"models":{"test-medium":{"inputTokens":6,"outputTokens":5,"cacheReadTokens":0,"cacheWriteTokens":0,"reasoningTokens":0}},"modelCalls":1,"toolCalls":0,"permissionDenials":0}}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('1558c2b632b46bfd155b77814b8d16e2', 5, '{"type":"turn_end","turnId":"1b88c4bed2277c0db9123088c45f1584","status":"completed","durationMs":4}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 0, '{"type":"turn_start","turnId":"70040bd50f4f5a60623441a0c2c827f0","sessionId":"117cd0b4-9b55-4ccd-8832-a30dff6176bd","userPrompt":"Read missing.txt"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 1, '{"type":"session_init","sessionId":"117cd0b4-9b55-4ccd-8832-a30dff6176bd","systemPrompt":"You are a fixture.","projectPath":"/work/main/tests/data/store_v1"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 2, '{"type":"tool_use","id":"t1","tool":"Read","input":{"file_path":"missing.txt"}}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 3, '{"type":"tool_result","toolUseId":"t1","tool":"Read","output":"missing.txt: no such file","isError":true}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 5, '{"type":"text","content":"That file does not exist.","turnPhase":"final"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 6, '{"type":"result","content":"That file does not exist.","accounting":{"models":{"test-medium":{"inputTokens":38,"outputTokens":7,"cacheReadTokens":0,"cacheWriteTokens":0,"reasoningTokens":0}},"modelCalls":2,"toolCalls":1,"permissionDenials":0}}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('4081a722ff90a9bce0e71482b5630ef8', 7, '{"type":"turn_end","turnId":"70040bd50f4f5a60623441a0c2c827f0","status":"completed","durationMs":6}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-dead', 0, '{"type":"turn_start","turnId":"turn-dead","sessionId":"s-dead","userPrompt":"Work forever"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-dead', 1, '{"type":"session_init","sessionId":"s-dead","systemPrompt":"You are a fixture."}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-dead', 3, '{"type":"text","content":"Working on it.","turnPhase":"commentary"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-unfinished', 0, '{"type":"turn_start","turnId":"turn-unf","sessionId":"s-unfinished","userPrompt":"Fail"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-unfinished', 1, '{"type":"session_init","sessionId":"s-unfinished"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-unfinished', 2, '{"type":"error","error":"model call failed: boom"}');
INSERT INTO agentkit_v1_fixture.agentkit_events VALUES ('r-unfinished', 3, '{"type":"turn_end","turnId":"turn-unf","status":"error","durationMs":12}');


--
-- Data for Name: agentkit_runs; Type: TABLE DATA; Schema: agentkit_v1_fixture; Owner: -
--

INSERT INTO agentkit_v1_fixture.agentkit_runs VALUES (1, '1558c2b632b46bfd155b77814b8d16e2', '117cd0b4-9b55-4ccd-8832-a30dff6176bd', 'fixture:agent', 'completed', 1796083350.1874816, 1796083350.1942081);
INSERT INTO agentkit_v1_fixture.agentkit_runs VALUES (2, '4081a722ff90a9bce0e71482b5630ef8', '117cd0b4-9b55-4ccd-8832-a30dff6176bd', 'fixture:agent', 'completed', 1796083350.1958497, 1796083350.2045107);
INSERT INTO agentkit_v1_fixture.agentkit_runs VALUES (3, 'r-dead', 's-dead', 'fixture:agent', 'running', 1796083350.2058072, NULL);
INSERT INTO agentkit_v1_fixture.agentkit_runs VALUES (4, 'r-unfinished', 's-unfinished', 'fixture:agent', 'running', 1796083350.2058072, NULL);


--
-- Data for Name: agentkit_schema_version; Type: TABLE DATA; Schema: agentkit_v1_fixture; Owner: -
--

INSERT INTO agentkit_v1_fixture.agentkit_schema_version VALUES (1);


--
-- Data for Name: agentkit_sessions; Type: TABLE DATA; Schema: agentkit_v1_fixture; Owner: -
--

INSERT INTO agentkit_v1_fixture.agentkit_sessions VALUES (1, '117cd0b4-9b55-4ccd-8832-a30dff6176bd', 'fixture:agent', 1796083350.168959, 1796083350.2001262, '{"k": "v", "n": 1}');
INSERT INTO agentkit_v1_fixture.agentkit_sessions VALUES (2, 's-index', 'fixture:index', 1796083350.2051835, 1796083350.2051835, '{"done": "117cd0b4-9b55-4ccd-8832-a30dff6176bd"}');
INSERT INTO agentkit_v1_fixture.agentkit_sessions VALUES (3, 's-dead', 'fixture:agent', 1796083350.2058086, 1796083350.2072413, '{}');
INSERT INTO agentkit_v1_fixture.agentkit_sessions VALUES (4, 's-unfinished', 'fixture:agent', 1796083350.2099965, 1796083350.2099965, '{}');


--
-- Data for Name: agentkit_transcript; Type: TABLE DATA; Schema: agentkit_v1_fixture; Owner: -
--

INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('117cd0b4-9b55-4ccd-8832-a30dff6176bd', 0, '{"role":"user","content":"Say hello"}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('117cd0b4-9b55-4ccd-8832-a30dff6176bd', 1, '{"role":"assistant","thinking":[],"text":"Hello from the fixture.","tool_calls":[]}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('117cd0b4-9b55-4ccd-8832-a30dff6176bd', 2, '{"role":"user","content":"Read missing.txt"}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('117cd0b4-9b55-4ccd-8832-a30dff6176bd', 3, '{"role":"assistant","thinking":[],"text":"","tool_calls":[{"id":"t1","name":"Read","arguments":{"file_path":"missing.txt"}}]}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('117cd0b4-9b55-4ccd-8832-a30dff6176bd', 4, '{"role":"tool","tool_call_id":"t1","name":"Read","content":"missing.txt: no such file","is_error":true}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('117cd0b4-9b55-4ccd-8832-a30dff6176bd', 5, '{"role":"assistant","thinking":[],"text":"That file does not exist.","tool_calls":[]}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('s-dead', 0, '{"role":"user","content":"Work forever"}');
INSERT INTO agentkit_v1_fixture.agentkit_transcript VALUES ('s-dead', 1, '{"role":"assistant","thinking":[],"text":"Working on it.","tool_calls":[]}');


--
-- Name: agentkit_runs_seq_seq; Type: SEQUENCE SET; Schema: agentkit_v1_fixture; Owner: -
--

SELECT pg_catalog.setval('agentkit_v1_fixture.agentkit_runs_seq_seq', 4, true);


--
-- Name: agentkit_sessions_seq_seq; Type: SEQUENCE SET; Schema: agentkit_v1_fixture; Owner: -
--

SELECT pg_catalog.setval('agentkit_v1_fixture.agentkit_sessions_seq_seq', 4, true);


--
-- Name: agentkit_events agentkit_events_pkey; Type: CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_events
    ADD CONSTRAINT agentkit_events_pkey PRIMARY KEY (run_id, pos);


--
-- Name: agentkit_runs agentkit_runs_id_key; Type: CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_runs
    ADD CONSTRAINT agentkit_runs_id_key UNIQUE (id);


--
-- Name: agentkit_runs agentkit_runs_pkey; Type: CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_runs
    ADD CONSTRAINT agentkit_runs_pkey PRIMARY KEY (seq);


--
-- Name: agentkit_sessions agentkit_sessions_id_key; Type: CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_sessions
    ADD CONSTRAINT agentkit_sessions_id_key UNIQUE (id);


--
-- Name: agentkit_sessions agentkit_sessions_pkey; Type: CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_sessions
    ADD CONSTRAINT agentkit_sessions_pkey PRIMARY KEY (seq);


--
-- Name: agentkit_transcript agentkit_transcript_pkey; Type: CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_transcript
    ADD CONSTRAINT agentkit_transcript_pkey PRIMARY KEY (session_id, pos);


--
-- Name: agentkit_runs_session; Type: INDEX; Schema: agentkit_v1_fixture; Owner: -
--

CREATE INDEX agentkit_runs_session ON agentkit_v1_fixture.agentkit_runs USING btree (session_id, seq);


--
-- Name: agentkit_sessions_agent; Type: INDEX; Schema: agentkit_v1_fixture; Owner: -
--

CREATE INDEX agentkit_sessions_agent ON agentkit_v1_fixture.agentkit_sessions USING btree (agent_id, seq);


--
-- Name: agentkit_runs agentkit_runs_session_id_fkey; Type: FK CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_runs
    ADD CONSTRAINT agentkit_runs_session_id_fkey FOREIGN KEY (session_id) REFERENCES agentkit_v1_fixture.agentkit_sessions(id) ON DELETE CASCADE;


--
-- Name: agentkit_transcript agentkit_transcript_session_id_fkey; Type: FK CONSTRAINT; Schema: agentkit_v1_fixture; Owner: -
--

ALTER TABLE ONLY agentkit_v1_fixture.agentkit_transcript
    ADD CONSTRAINT agentkit_transcript_session_id_fkey FOREIGN KEY (session_id) REFERENCES agentkit_v1_fixture.agentkit_sessions(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict WilbMnrXvD8JXmtEXBKOkBc45cTcoOVUYwSxBhROx9fZPsB5pIJvazNWWjMu7g7

