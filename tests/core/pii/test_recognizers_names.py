"""Person names by cue, email-linked names, organizations by suffix (no NER needed);
the ALL-CAPS pass needs the real model (slow)."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.names import (
    CopyrightHolderRecognizer, EmailNameRecognizer, MailHeaderNameRecognizer, NameCueRecognizer,
    PeopleLineRecognizer,
)
from preflight.core.pii.recognizers.orgs import OrganizationCueRecognizer

from pii_testutil import run, run_with


@pytest.mark.parametrize("text,value", [
    ("Meeting with Dr. Megan Fisher tomorrow", "Megan Fisher"),
    ("Mrs. O'Brien called", "O'Brien"),
    ("Dear Jane Roe,\nthanks", "Jane Roe"),
    ("Name: Carlos Mendes\nAge: 41", "Carlos Mendes"),
    ("Best regards,\nMaria Lopez", "Maria Lopez"),
    # who wrote a quoted message (attributions in SpamAssassin's public e-mails)
    ("Once upon a time, Manfred wrote :", "Manfred"),
    ("Matthias Haase wrote:", "Matthias Haase"),
    ("At 3:25 PM -0400 on 10/8/02, Ned Jackson Lovely wrote:", "Ned Jackson Lovely"),
    ("Vincent <cult@free.fr> wrote:", "Vincent"),
    ("Once upon a time, Harig, wrote :", "Harig"),
    ("Robert Harley writes:", "Robert Harley"),
    ("tom wrote:", "tom"),
])
def test_name_cues(text, value):
    assert ("PERSON", value) in run(NameCueRecognizer(), text)


def test_name_cue_ignores_lowercase():
    assert run(NameCueRecognizer(), "dear all, the results") == []


def test_email_linked_name():
    text = "Write to Jane Roe <jane.roe@example.com> or to the Board."
    assert run(EmailNameRecognizer(), text) == [("PERSON", "Jane Roe")]


@pytest.mark.parametrize("text,found", [
    ('From: "R. A. Hettinga" <rah@shipwright.com>', [("PERSON", "R. A. Hettinga")]),
    ("From: rah@shipwright.com (R. A. Hettinga)", [("PERSON", "R. A. Hettinga")]),
    ("To: Jane Roe <jr@example.com>", [("PERSON", "Jane Roe")]),
    ("Cc: Roe, Jane <jr@example.com>", [("PERSON", "Roe, Jane")]),
    ("From: Tom <tomwhore@slack.net>", [("PERSON", "Tom")]),
    ("From: Razor Users <razor@example.net>", []),          # a mailing list
    ("From: Amazon <store@amazon.com>", []),                # one word, not a given name
    ("From: The Economist <news@economist.com>", []),
    ("Reply-To: Customer Support <help@example.com>", []),
    # the display-name form outside a header (a changelog's sign-off, an AUTHORS line)
    (" -- Lee Garrett <debian@rocketjump.eu>  Tue, 07 Oct 2025", [("PERSON", "Lee Garrett")]),
    ("Signed-off-by: Jane Roe <jr@example.com>", [("PERSON", "Jane Roe")]),
    ("He wrote from Jane Roe <jr@example.com> today", [("PERSON", "Jane Roe")]),
    ("Write to Customer Support <help@example.com> today", []),
    ("Contact Jane Roe <jr@example.com> today", [("PERSON", "Jane Roe")]),  # not the label
    ("Cheers, Jan Novak <jn@example.com>", [("PERSON", "Jan Novak")]),  # a name, not "Jan"
    # a name on no list where a line lists a person (dpkg's THANKS, perl's AUTHORS) …
    ("Dmitry Shachnev <mitya57@debian.org>", [("PERSON", "Dmitry Shachnev")]),
    (" -- Modestas Vainius <modax@debian.org>  Sun, 01 Jan 2012",
     [("PERSON", "Modestas Vainius")]),
    ("Copyright: 2001, Kurt D Schwehr <schwehr@example.edu>", [("PERSON", "Kurt D Schwehr")]),
    ("* Jean-loup Gailly <jloup@example.org>", [("PERSON", "Jean-loup Gailly")]),
    # a Vietnamese name of four words (git's AUTHORS)
    ("Nguyễn Thái Ngọc Duy <pclouds@gmail.com>", [("PERSON", "Nguyễn Thái Ngọc Duy")]),
    # … but not in a mail header, where shops write their names the same way, and never
    # with a word of a role or a service (dictionary words: test_detector.py, with the
    # model's dictionary)
    ("From: Dmitry Shachnev <mitya57@debian.org>", []),
    ("Python Software <psf@example.org>", []),
    ("Build Daemon <buildd@example.org>", []),
])
def test_display_names_in_mail_headers(text, found):
    assert run(MailHeaderNameRecognizer(), text) == found


@pytest.mark.parametrize("text,found", [
    ('From: Tom <tomwhore@slack.net>', [("PERSON", "Tom")]),     # display name, short
    ('From: "Tom" <tomwhore@slack.net>', [("PERSON", "Tom")]),
    ("From: The <theodore@example.com>", []),                    # not a given name
    ("See Tom at tomwhore@slack.net", []),                       # not its display name
    ("From: Ann <bob@example.com>", []),                         # does not spell it
])
def test_a_short_display_name_that_spells_the_address(text, found):
    assert run(EmailNameRecognizer(), text) == found


@pytest.mark.parametrize("text,found", [
    ("Thanks to 俞晨东 for discovering this vulnerability", [("PERSON", "俞晨东")]),
    ("Thanks to Mark Chen of Mirantis for reporting this", [("PERSON", "Mark Chen")]),
    ("install dashed commands (thx\n    Chris Lamb for suggesting it)", [("PERSON", "Chris Lamb")]),
    ("amd64 machine (thx to Marco for detecting this)", [("PERSON", "Marco")]),
    ("Patch by Jane Roe.", [("PERSON", "Jane Roe")]),
    # a man page's AUTHOR section (the X server's): the model called Packard a firm
    ("It has since been extensively rewritten by Keith Packard and Bob Scheifler, from MIT.",
     [("PERSON", "Keith Packard")]),
    ("This manual page was updated by Patrick Lam.", [("PERSON", "Patrick Lam")]),
    ("Thanks to Microsoft for the report", []),        # no listed name
    ("Updated by Microsoft Research", []),
    ("Sponsored by Jane Street Group", []),                # a firm
    ("thanks to the team", []),
])
def test_a_name_credited_for_work(text, found):
    assert [f for f in run(NameCueRecognizer(), text)] == found


@pytest.mark.parametrize("text,found", [
    # lines of a Debian copyright file
    (" 2005, LaMont Jones <lamont@ubuntu.com>", [("PERSON", "LaMont Jones")]),
    ("Copyright: 2013-2022, Linus Nielsen Feltzing <linus@haxx.se>",
     [("PERSON", "Linus Nielsen Feltzing")]),
    ("Signed by Linus Nielsen Feltzing at linus@haxx.se", []),   # three words, no display
])
def test_a_display_name_of_three_words_or_an_inner_capital(text, found):
    assert run(EmailNameRecognizer(), text) == found


@pytest.mark.parametrize("text,found", [
    # a THANKS file's columns: the name, then its address
    ("Andrew Burgess                      aab@cichlid.com", [("PERSON", "Andrew Burgess")]),
    ("James Lemley\tJames.Lemley@acxiom.com", [("PERSON", "James Lemley")]),
    ("Cray-Cyber Project                  http://www.cray-cyber.org", []),
    ("Mailing List                        list@example.org", []),
])
def test_a_name_in_a_column_beside_its_address(text, found):
    assert run(MailHeaderNameRecognizer(), text) == found


@pytest.mark.parametrize("text,found", [
    # a credit line: a name, then a link to the person's page
    ("Geraldo Cockerhan - http://www.blendswap.com/blends/view/40495 CCBYSA",
     [("PERSON", "Geraldo Cockerhan")]),
    ("* Maria Lopez (https://example.org/~maria)", [("PERSON", "Maria Lopez")]),
    ("Contact - https://acme.com/contact", []),            # a label, not a name
    ("Download Now - https://example.com/get", []),        # no listed name
    ("Mailing List: https://lists.example.org", []),
    ("The site of Maria Lopez - https://example.org", []),  # not at the line's start
    ("Per https://github.com/Alexpux/MSYS2-packages/issues/163", []),   # "per the issue"
    ("Copyright Mathias Bynens <https://mathiasbynens.be/>", [("PERSON", "Mathias Bynens")]),
    ("Copyright (c) 2014-2020, Marcel Böhme  https://www.comp.nus.edu.sg/~mboehme",
     [("PERSON", "Marcel Böhme")]),
])
def test_a_name_opening_a_line_beside_a_web_address(text, found, dictionary):
    # names on no census list ("Mathias Bynens") read as names by the dictionary
    assert run_with(MailHeaderNameRecognizer(), text, dictionary) == found


@pytest.mark.parametrize("text,found", [
    # the column gap and the address's own capitals are not part of the name
    ("James Lemley                        James.Lemley@acxiom.com",
     [("PERSON", "James Lemley")]),
])
def test_an_address_spelling_a_name_beside_it_in_a_column(text, found):
    assert run(EmailNameRecognizer(), text) == found


@pytest.mark.parametrize("text,value", [
    ("funded by Reid LLC.", "Reid LLC"),
    ("provided by Tucker and Sons today", "Tucker and Sons"),
    ("Acme Widgets Inc. said", "Acme Widgets Inc."),
    ("hired through Parks, Miller and Rosales.", "Parks, Miller and Rosales"),
])
def test_org_cues(text, value):
    assert ("ORGANIZATION", value) in run(OrganizationCueRecognizer(), text)


def test_org_cue_skips_sentence_words():
    assert run(OrganizationCueRecognizer(), "The Group met.") == []


def test_no_firm_on_a_line_that_lists_people():
    # the screenshot memo's "To:" line was one firm, and "Fernandez" went out
    assert run(OrganizationCueRecognizer(), "To: All staff, Fernandez, Harris and Webb") == []
    assert run(OrganizationCueRecognizer(), "Attendees: Parks, Miller and Rosales") == []


def test_the_memo_recipients_are_people_on_the_real_detector(real_detector):
    text = "MEMORANDUM\nTo: All staff, Fernandez, Harris and Webb\nFrom: Desiree Stafford\n"
    found = {text[s.start:s.end] for s in real_detector.detect(text) if s.type == "PERSON"}
    assert found == {"Fernandez", "Harris", "Webb", "Desiree Stafford"}


@pytest.mark.parametrize("text", [
    "He wrote:", "Someone wrote:", "The author wrote:", "I wrote in my last mail",
    "wrote:", "also wrote:", "Microsoft wrote the driver", "we wrote: nothing",
])
def test_no_writer_where_no_one_is_named(text):
    assert run(NameCueRecognizer(), text) == []


def test_a_writer_the_model_calls_a_group_is_protected_as_a_person(real_detector):
    # the model tags "Ralf" NRP (a group) and the default policy keeps groups: it went out
    text = "Once upon a time, Ralf wrote :\n\nHmmm... I don't see any :-)"
    spans = real_detector.detect(text)
    assert ("PERSON", "Ralf") in [(s.type, text[s.start:s.end]) for s in spans]


@pytest.mark.parametrize("text,found", [
    # sign-offs of SpamAssassin's public e-mails: a given name alone on its line, often a
    # paragraph of its own (the detector reads paragraph by paragraph)
    ("It works now.\n\n- Joe\n\nhttp://xent.com/mailman/listinfo/fork", [("PERSON", "Joe")]),
    ("Greg", [("PERSON", "Greg")]),
    ("--Harlan", [("PERSON", "Harlan")]),
    ("-Ian.", [("PERSON", "Ian")]),
    ("Thanks. \nUlises", [("PERSON", "Ulises")]),
    ("\tJehan\n", [("PERSON", "Jehan")]),
    ("Rohit\nrobot", [("PERSON", "Rohit")]),              # only in US birth records
    # one word alone that is no sign-off
    ("Ok\n\nWell I am having fun with it", []),          # census "given name", a word
    ("Ruby", []),                                          # census, and a dictionary word
    ("Sierra", []),
    ("August", []),                                        # a month
    ("Thu", []),
    ("France", []),                                        # a country
    ("Thanks", []),
    ("Summary", []),
    ("Greg Smith wrote the summary", []),                  # not alone on its line
    ("greg", []),                                          # lower case
])
def test_a_given_name_alone_on_its_line(text, found, dictionary):
    assert run_with(NameCueRecognizer(), text, dictionary) == found


def test_a_sign_off_the_model_misses_is_protected(real_detector):
    # the model tags nothing in "- Joe": the default policy sent it (34 such sign-offs in
    # half of SpamAssassin's easy ham, 1 after)
    text = "It works now.\n\n- Joe\n\nhttp://xent.com/mailman/listinfo/fork\n"
    spans = real_detector.detect(text)
    assert ("PERSON", "Joe") in [(s.type, text[s.start:s.end]) for s in spans]


@pytest.mark.slow
def test_all_caps_name_found_by_recasing(real_detector):
    text = "Signed by JOHN SMITH on behalf of the board."
    spans = real_detector.detect(text)
    assert ("PERSON", "JOHN SMITH") in [(s.type, text[s.start:s.end]) for s in spans]


@pytest.mark.parametrize("text,found", [
    # a memo's recipients: three people, not the firm "Fernandez, Harris and Webb"
    ("To: All staff, Fernandez, Harris and Webb",
     [("PERSON", "Fernandez"), ("PERSON", "Harris"), ("PERSON", "Webb")]),
    ("Attendees: Dr. Jane Roe; Tom Baker, Finance team and Priya",
     [("PERSON", "Jane Roe"), ("PERSON", "Tom Baker"), ("PERSON", "Priya")]),
    ("Cc: Legal, HR, Sales", []),                      # departments
    ("To: All staff", []),
    ("We hired Fernandez, Harris and Webb as counsel.", []),   # no people line
])
def test_names_in_a_list_of_people(text, found, dictionary):
    assert run_with(PeopleLineRecognizer(), text, dictionary) == found


@pytest.mark.parametrize("text,found", [
    # a Debian copyright file's holders (git's): firm-tagged, place-tagged, hyphenated
    ("Copyright: © 2005-2022, Linus Torvalds and others.", [("PERSON", "Linus Torvalds")]),
    ("Copyright: © 1995-2003, 2010, 2014, 2016 Jean-loup Gailly, Mark Adler",
     [("PERSON", "Jean-loup Gailly"), ("PERSON", "Mark Adler")]),
    ("Copyright: © 2003-2009, Davide Libenzi, Johannes E. Schindelin",
     [("PERSON", "Davide Libenzi"), ("PERSON", "Johannes E. Schindelin")]),
    ("/* Copyright (C) 2012 by Daniel J. Bernstein */", [("PERSON", "Daniel J. Bernstein")]),
    # continuation lines, past an address that ends one of them (libssl3's file)
    ("Copyright: 1995-2020, The OpenSSL Project Authors\n"
     "\t   1995-1998, Eric A. Young, Tim J. Hudson\n"
     "\t   2008 Andy Polyakov <appro@openssl.org>\n"
     "\t   2012-2016 Jean-Philippe Aumasson\n"
     "License: Apache-2.0\n"
     "\t   2019 Not Continued\n",
     [("PERSON", "Eric A. Young"), ("PERSON", "Tim J. Hudson"), ("PERSON", "Andy Polyakov"),
      ("PERSON", "Jean-Philippe Aumasson")]),
    # a field's value on its next line, marks before the years, holders between years,
    # a sentence after the name
    ("Copyright:\n \u00a9 2004 Scott James Remnant\nLicense: GPL-2+",
     [("PERSON", "Scott James Remnant")]),
    ("Copyright: \u00a9 2004-2022 Canonical Ltd.\n           \u00a9 2004-2005 Michiel Sikkes",
     [("PERSON", "Michiel Sikkes")]),
    ("Copyright: Ian Murdock (before 1996)\n"
     "Copyright: 1996-2001 Kevin Dalley 2002 Thomas Schoepf 2003-2023 Andreas Metzler",
     [("PERSON", "Ian Murdock"), ("PERSON", "Kevin Dalley"), ("PERSON", "Thomas Schoepf"),
      ("PERSON", "Andreas Metzler")]),
    ("Copyright: Copyright(C) 1996-2019 Julian Seward. All rights reserved",
     [("PERSON", "Julian Seward")]),
    # firms, however they are written
    ("Copyright: 2010 Oracle America, Inc.", []),
    ("Copyright (c) 2012 Intel Corporation", []),
    ("Copyright 2011 Google Inc., 2020 Red Hat", []),
    ("Copyright (C) 1989 Free Software Foundation, Inc.", []),
    ("Copyright: 2002 The OpenTSA Project.", []),
    # prose that mentions copyright
    ("Copyright law requires Jane Roe to pay.", []),
])
def test_copyright_holders(text, found):
    assert run(CopyrightHolderRecognizer(), text) == found


@pytest.mark.parametrize("text,found", [
    # a team or a service whose address spells its name is no person
    ("To: IT Service Desk <servicedesk@northwind-logistics.eu>", []),
    ("From: Payroll Team <payroll@acme.com>", []),
    ("Please write to Customer Support <support@example.com> instead.", []),
    # English words that are census names still are
    ("From: Mark Rose <mark.rose@acme.com>", [("PERSON", "Mark Rose")]),
    ("From: Hope Daniels <hope.daniels@example.org>", [("PERSON", "Hope Daniels")]),
])
def test_an_address_spelling_a_team_names_no_person(text, found, dictionary):
    assert run_with(EmailNameRecognizer(), text, dictionary) == found
