"""First rule version of DePrompt's confidential attributes: HEALTH (conditions,
symptoms, allergies), MEDICAL (medications, procedures), PAYMENT (amounts, salaries)
and ASSET (holdings, property and portfolio values, securities codes).

Term lists are deliberately general vocabulary; a term alone gets a modest score and a
nearby cue ("diagnosed with", "salary", "portfolio"...) raises it.
"""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer
from stdnum import isin

from preflight.core.pii.propagate import trie_regex
from preflight.core.pii.recognizers.amounts import amount_pattern
from preflight.core.pii.recognizers.base import (
    Rule, RuleRecognizer, context_regex, cue, has_context, make_result,
)
from preflight.core.types import Evidence


CONDITIONS = [
    "diabetes", "type 1 diabetes", "type 2 diabetes", "hypertension", "high blood pressure",
    "asthma", "cancer", "breast cancer", "lung cancer", "prostate cancer", "leukemia",
    "lymphoma", "melanoma", "tumor", "tumour", "depression", "major depressive disorder",
    "anxiety disorder", "panic disorder", "bipolar disorder", "schizophrenia", "ptsd",
    "post-traumatic stress disorder", "ocd", "adhd", "autism", "dementia",
    "alzheimer's", "alzheimer's disease", "parkinson's", "parkinson's disease", "epilepsy",
    "multiple sclerosis", "migraine", "migraines", "stroke", "heart attack",
    "heart disease", "heart failure", "arrhythmia", "atrial fibrillation", "copd",
    "bronchitis", "pneumonia", "tuberculosis", "hiv", "aids", "hepatitis", "hepatitis b",
    "hepatitis c", "cirrhosis", "kidney disease", "renal failure", "arthritis",
    "rheumatoid arthritis", "osteoporosis", "lupus", "crohn's disease", "celiac disease",
    "ulcerative colitis", "obesity", "anorexia", "bulimia", "eating disorder", "insomnia",
    "sleep apnea", "covid-19", "long covid", "influenza", "chronic pain", "fibromyalgia",
    "hypothyroidism", "hyperthyroidism", "anemia", "sickle cell", "concussion",
    "infertility", "pregnancy", "pregnant", "miscarriage", "substance abuse",
    "alcoholism", "addiction", "opioid use disorder", "allergy", "allergies",
    "food allergy", "peanut allergy", "disability", "glaucoma", "cataracts",
]
MEDICATIONS = [
    "metformin", "insulin", "lisinopril", "amlodipine", "atorvastatin", "simvastatin",
    "rosuvastatin", "losartan", "metoprolol", "omeprazole", "pantoprazole", "levothyroxine",
    "albuterol", "salbutamol", "gabapentin", "sertraline", "fluoxetine", "citalopram",
    "escitalopram", "paroxetine", "venlafaxine", "bupropion", "trazodone", "alprazolam",
    "lorazepam", "diazepam", "clonazepam", "zolpidem", "quetiapine", "olanzapine",
    "risperidone", "aripiprazole", "lithium", "lamotrigine", "valproate", "levetiracetam",
    "methylphenidate", "adderall", "ritalin", "warfarin", "apixaban", "rivaroxaban",
    "clopidogrel", "aspirin", "ibuprofen", "naproxen", "acetaminophen", "paracetamol",
    "tramadol", "oxycodone", "hydrocodone", "morphine", "fentanyl", "codeine",
    "methadone", "buprenorphine", "prednisone", "prednisolone", "hydrocortisone",
    "amoxicillin", "azithromycin", "doxycycline", "ciprofloxacin", "penicillin",
    "cephalexin", "furosemide", "hydrochlorothiazide", "spironolactone", "ozempic",
    "semaglutide", "tirzepatide", "humira", "adalimumab", "methotrexate", "tamoxifen",
    "chemotherapy", "antidepressants", "antibiotics", "statins", "antiretroviral",
    "truvada", "prep", "epipen", "inhaler", "viagra", "sildenafil", "finasteride",
]
PROCEDURES = [
    "surgery", "bypass surgery", "heart surgery", "appendectomy", "mastectomy",
    "hysterectomy", "vasectomy", "c-section", "caesarean section", "biopsy", "colonoscopy",
    "endoscopy", "mri scan", "ct scan", "dialysis", "radiotherapy", "radiation therapy",
    "chemo", "transplant", "kidney transplant", "physical therapy", "physiotherapy",
    "psychotherapy", "rehab", "rehabilitation", "ivf", "abortion", "blood transfusion",
    "knee replacement", "hip replacement", "inpatient", "outpatient", "hospitalized",
    "hospitalised", "admitted to hospital", "admitted to the hospital", "icu",
]

_HEALTH_CUES = context_regex([
    "diagnosed", "diagnosis", "suffers", "suffering", "suffered", "history of", "treated",
    "treatment", "symptoms", "symptom", "allergic", "condition", "patient", "chronic",
    "tested positive", "living with", "battling", "has", "had", "have", "medical",
    "health", "doctor", "physician", "clinic", "relapse", "recovering", "therapy",
])
_MED_CUES = context_regex([
    "prescribed", "prescription", "taking", "takes", "took", "dose", "dosage", "daily",
    "medication", "medicine", "drug", "treated with", "started on", "underwent",
    "scheduled for", "patient", "doctor", "hospital", "recovering from", "after",
])


def _term_atom(ch: str) -> str:
    return {" ": r"[ \t]+", "'": "['’]"}.get(ch) or re.escape(ch)


def _terms(words: list[str]) -> str:
    """Any of ``words`` as a whole word (compile with re.IGNORECASE): a trie, so a position
    costs one test per letter read rather than one per word (hundreds of words)."""
    return r"(?<![\w-])(?:" + trie_regex(words, atom=_term_atom) + r")(?![\w-])"


_DOSE = r"(?:[ \t]+\d+(?:[.,]\d+)?[ \t]?(?:mg|mcg|µg|g|ml|mL|IU|units?)\b(?:[ \t]+(?:daily|twice daily|a day|bid|tid|qd))?)"
_I = re.IGNORECASE
_STOP = (r"(?:in|on|at|last|and|or|when|after|before|since|by|the|a|an|this|that|from|during|"
         r"while|but|which|who|was|is|two|three|four|five|years?|months?|weeks?|ago)")
_WORD = rf"(?!{_STOP}\b)[A-Za-z0-9][\w'’-]*"
_NOT_DRUG = (rf"(?:{_STOP}|to|for|with|as|of|his|her|him|them|their|my|me|you|your|us|our|"
             r"it|its|these|those|no|any|some|only|medication|medicine|drugs?|treatment)")

HEALTH_RULES = (
    Rule("HEALTH", re.compile(_terms(CONDITIONS), _I), 0.45,
         "A health condition term", context=_HEALTH_CUES, context_score=0.8, window=60,
         context_why=" after a health cue (diagnosed with, history of, symptoms…)"),
    Rule("HEALTH", re.compile(r"\b(?:allergic|allergy|allergies)[ \t]+to[ \t]+"
                              r"([A-Za-z][\w-]*(?:[ \t]+(?:and|or)[ \t]+[A-Za-z][\w-]*)?)", _I),
         0.8, "An allergy", group=1, needs=cue("allerg", ignore_case=True)),
    Rule("HEALTH", re.compile(r"\b(?:diagnosed|tested[ \t]+positive)[ \t]+(?:with|for)[ \t]+"
                              r"((?:" + _WORD + r"[ \t]+){0,2}" + _WORD + ")", _I),
         0.75, "What someone was diagnosed with", group=1,
         needs=cue("diagnosed", "tested", ignore_case=True)),
    Rule("HEALTH", re.compile(r"\bblood[ \t]+pressure[ \t]+(?:of[ \t]+|is[ \t]+|was[ \t]+)?"
                              r"(\d{2,3}[ \t]*/[ \t]*\d{2,3})", _I), 0.8,
         "A blood pressure reading", group=1, needs=cue("blood", ignore_case=True)),
)
MEDICAL_RULES = (
    Rule("MEDICAL", re.compile(_terms(MEDICATIONS) + _DOSE + "?", _I), 0.5,
         "A medication name", context=_MED_CUES, context_score=0.8, window=60,
         context_why=" next to a prescription cue (prescribed, taking, dose…)"),
    # a procedure named with no one undergoing it is a topic ("the abortion law", "GP
    # surgery hours"), not someone's medical history: only next to a medical cue
    Rule("MEDICAL", re.compile(_terms(PROCEDURES), _I), 0.75,
         "A medical procedure or hospital stay next to a medical cue", context=_MED_CUES,
         require_context=True, window=60, context_why=""),
    # "prescribed to the applicant", "prescribed for him": a function word is no drug
    Rule("MEDICAL", re.compile(r"\b(?:prescribed|started[ \t]+on)[ \t]+((?!" + _NOT_DRUG
                               + r"\b)[A-Za-z][\w-]+" + _DOSE + "?)", _I), 0.7,
         "A prescribed medication", group=1,
         needs=cue("prescribed", "started", ignore_case=True)),
    Rule("MEDICAL", re.compile(r"\b[A-Z][a-z]{3,}(?:in|ol|am|ide|ine|one|pril|sartan|statin|mab|"
                               r"zole|cycline|mycin|xacin)" + _DOSE), 0.7,
         "A drug name with a dose"),
)


class HealthRecognizer(RuleRecognizer):
    """Health conditions, allergies, diagnoses (DePrompt HEALTH)."""

    evidence = Evidence.RULE

    RULES = HEALTH_RULES


class MedicalRecognizer(RuleRecognizer):
    """Medications, doses and procedures (DePrompt MEDICAL)."""

    evidence = Evidence.RULE

    RULES = MEDICAL_RULES


_AMOUNT = amount_pattern()
_ASSET_CUES = context_regex([
    "net worth", "portfolio", "holdings", "holding", "savings", "assets", "asset", "property",
    "house", "home", "apartment", "estate", "shares", "stock", "stocks", "bonds", "401(k)",
    "401k", "ira", "pension", "investment", "investments", "invested", "valued", "worth",
    "equity", "deposit", "balance", "mortgage", "owns", "inheritance", "fund", "crypto",
])
_PAYMENT_CUES = context_regex([
    "salary", "salaries", "paid", "pay", "pays", "earns", "earned", "earning", "income",
    "wage", "wages", "bonus", "compensation", "invoice", "invoiced", "payment", "payments",
    "transfer", "transferred", "charged", "charge", "fee", "fees", "price", "cost", "costs",
    "spent", "spend", "bill", "billed", "premium", "insurance", "refund", "purchase",
    "purchased", "bought", "owes", "owed", "debt", "loan", "rent", "payroll", "raise",
    "reimbursement", "transaction", "withdrew", "withdrawal",
])


class MoneyRecognizer(EntityRecognizer):
    """Amounts with a currency: ASSET after a holdings/property cue, else PAYMENT."""

    evidence = Evidence.RULE

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["PAYMENT", "ASSET"], name=name,
                         supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        out = []
        for m in _AMOUNT.finditer(text):
            s, e = m.span()
            while e > s and text[e - 1] in " \t":
                e -= 1
            if has_context(text, s, e, _ASSET_CUES, 60, 30):
                ent, score, why = "ASSET", 0.8, "An amount of money next to a holdings or property cue"
            elif has_context(text, s, e, _PAYMENT_CUES, 60, 30):
                ent, score, why = "PAYMENT", 0.8, "An amount of money next to a salary or payment cue"
            else:
                ent, score, why = "PAYMENT", 0.5, "An amount of money"
            if entities and ent not in entities:
                continue
            out.append(make_result(self, ent, s, e, score, why))
        return out


class AssetRecognizer(RuleRecognizer):
    """Holdings written as share counts, and securities codes (ISIN)."""

    evidence = Evidence.RULE

    RULES = (
        Rule("ASSET", re.compile(r"\b\d[\d,]*(?:\.\d+)?[ \t]+shares[ \t]+(?:of[ \t]+)?"
                                 r"[A-Z][\w&.-]*(?:[ \t]+[A-Z][\w&.-]*){0,3}"), 0.75,
             "A number of shares held in a company", needs=cue("shares")),
        Rule("ASSET", re.compile(r"\b[A-Z]{2}[A-Z0-9]{9}\d\b"), 0.85,
             "A securities code (ISIN) that passes its check digit", validate=isin.is_valid),
    )
